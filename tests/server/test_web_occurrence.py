"""The inbox answers the asking of a question its card shows, never a later one (Chromium)."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, Page, Route, expect

from baton import App, ResumabilityConfig
from tests.runner.test_occurrences import looping
from tests.server.conftest import Live, StartLive
from tests.server.test_respond_occurrence import pending_items
from tests.server.test_web_page import browser

__all__ = ["browser"]  # the fixture, used by name

pytestmark = pytest.mark.browser


async def _inbox_at_pass_1(start_live: StartLive, browser: Browser) -> tuple[Live, str, Page]:
    """A server with the looping app, a session whose loop asks 'review' for pass 1, and
    the inbox open on it."""
    app = App(
        name="loop", root_agent=looping(), resumability_config=ResumabilityConfig(is_resumable=True)
    )
    live: Live = await start_live(apps=[app], web=True)
    sid = await live.create("loop", "user")
    await live.start("loop", "user", sid)
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(live.url)
    return live, sid, page


async def test_a_card_for_an_answered_pass_is_refused_and_the_next_pass_gets_its_own_card(
    start_live: StartLive, browser: Browser
) -> None:
    live, sid, page = await _inbox_at_pass_1(start_live, browser)
    stale = page.locator("form.card[data-interrupt='review']")
    await expect(stale.locator("h3")).to_have_text("pass 1?")

    # The page stops hearing about changes (as if the update were still on its way) while
    # somebody else answers pass 1 and the loop asks 'review' again for pass 2.
    await page.evaluate("live.controller.abort()")
    (first,) = await pending_items(live, "user")
    url = f"/apps/loop/users/user/sessions/{sid}/interrupts/review/respond"
    answered = await live.client.post(
        url, json={"response": "from elsewhere", "occurrence": first["occurrence"]}
    )
    assert answered.status_code == 200, answered.text
    (second,) = await pending_items(live, "user")
    assert second["message"] == "pass 2?"

    # The person answers the card they see, for pass 1: refused, pass 2 stays open.
    await stale.locator("textarea[name=answer]").fill('"meant for pass 1"')
    await stale.locator("button[type=submit]").click()
    await expect(stale.locator(".error")).to_contain_text(str(first["occurrence"]))
    (still,) = await pending_items(live, "user")
    assert still["occurrence"] == second["occurrence"]
    session = (await live.client.get(f"/apps/loop/users/user/sessions/{sid}")).json()
    assert session["state"]["passes"] == 1

    # Live again: pass 2 gets a card of its own, and its answer answers pass 2.
    await page.evaluate("connect()")
    card = page.locator("form.card[data-interrupt='review']")
    await expect(card.locator("h3")).to_have_text("pass 2?")
    await card.locator("textarea[name=answer]").fill('"for pass 2"')
    await card.locator("button[type=submit]").click()
    await expect(card.locator("h3")).to_have_text("pass 3?")
    session = (await live.client.get(f"/apps/loop/users/user/sessions/{sid}")).json()
    assert session["state"]["passes"] == 2
    answers = [
        p["functionResponse"]["response"]
        for e in session["events"]
        if e["author"] == "user"
        for p in e.get("content", {}).get("parts", [])
        if "functionResponse" in p
    ]
    assert answers == [{"result": "from elsewhere"}, {"result": "for pass 2"}]


async def test_a_card_sent_again_after_its_reply_was_lost_shows_it_answered_once(
    start_live: StartLive, browser: Browser
) -> None:
    live, sid, page = await _inbox_at_pass_1(start_live, browser)
    card = page.locator("form.card[data-interrupt='review']")
    await expect(card.locator("h3")).to_have_text("pass 1?")
    await page.evaluate("live.controller.abort()")  # the card stays as the person sees it

    # The first answer reaches the server and acts, but its reply never reaches the page
    # (a dropped connection); the person presses the button again.
    sent: list[str | None] = []

    async def lose_the_first_reply(route: Route) -> None:
        sent.append(await route.request.header_value("idempotency-key"))
        if len(sent) == 1:
            await route.fetch()
            await route.abort("connectionreset")
        else:
            await route.continue_()

    await page.route("**/interrupts/review/respond", lose_the_first_reply)
    await card.locator("textarea[name=answer]").fill('"for pass 1"')
    await card.locator("button[type=submit]").click()
    await expect(card.locator(".error")).not_to_be_empty()
    await card.locator("button[type=submit]").click()

    # The retry carries the first request's key: it gets the first reply, not a refusal.
    await expect(card.locator("button[type=submit]")).to_have_text("Answered")
    await expect(card.locator(".error")).to_be_empty()
    first_key, second_key = sent
    assert first_key is not None
    assert second_key == first_key
    session = (await live.client.get(f"/apps/loop/users/user/sessions/{sid}")).json()
    assert session["state"]["passes"] == 1
    (open_now,) = await pending_items(live, "user")
    assert open_now["message"] == "pass 2?"
