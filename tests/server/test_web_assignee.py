"""The inbox page with a question for another person, in Chromium: Ann sees whom her
run waits on (and no form); Bob, with his own key, sees Ann's question and answers it."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, Page, expect

from baton.sessions.store import InterruptStatus, SessionKey
from baton.types import SessionId
from tests.server.conftest import Live, StartLive
from tests.server.test_assignee import ANN, KEYS, manager_app, paused_for_bob
from tests.server.test_web_page import browser, screenshot

__all__ = ["browser"]  # the fixture, imported for this module's tests

pytestmark = pytest.mark.browser


async def _inbox_of(browser: Browser, live: Live, user: str, key: str) -> Page:
    context = await browser.new_context()  # its own localStorage: one person per page
    page = await context.new_page()
    await page.goto(f"{live.url}/?user={user}")
    await page.locator("#api-key").fill(key)
    await page.locator("#api-key").press("Enter")
    await expect(page.locator("#live")).to_have_text("live")
    return page


async def test_ann_sees_whom_it_waits_on_and_bob_answers_with_his_key(
    start_live: StartLive, browser: Browser
) -> None:
    live: Live = await start_live([manager_app()], keys=KEYS, web=True)
    sid = await paused_for_bob(live, ANN)

    anns = await _inbox_of(browser, live, "ann", "ann-key")
    waiting = anns.locator(f".card.waiting[data-session='{sid}']")
    await expect(waiting.locator(".assignee")).to_have_text("waits on bob")
    await expect(waiting).to_contain_text("Waiting on bob: only they can answer this question.")
    await expect(anns.locator(f"form.card[data-session='{sid}']")).to_have_count(0)
    await screenshot(anns, "assignee-owner")

    bobs = await _inbox_of(browser, live, "bob", "bob-key")
    card = bobs.locator(f"form.card[data-session='{sid}']")
    await expect(card.locator("h3")).to_have_text("Refund?")
    await expect(card.locator(".assignee")).to_have_text("asked by ann, for you")
    await screenshot(bobs, "assignee-inbox")
    await card.locator("input[value='yes']").check()
    await card.locator("button[type=submit]").click()
    # Answered: the live inbox drops the card; Bob's activity names Ann's session but
    # does not link to it (he may not open it).
    await expect(card).to_have_count(0)
    entry = bobs.locator("#activity li[data-status=answered]")
    await expect(entry).to_contain_text(f"refunds · ann's session {sid[:8]}: answered")
    await expect(bobs.locator("#activity a")).to_have_count(0)

    key = SessionKey("refunds", "ann", SessionId(sid))
    [row] = await live.service.store.list_interrupts(
        key.app_name, key.user_id, session_id=key.session_id, status=InterruptStatus.ANSWERED
    )
    assert (row.answered_by, row.answer) == ("bob", {"approved": True})
    # Ann's card goes away once Bob answered (her page is live).
    await expect(anns.locator(f".card[data-session='{sid}']")).to_have_count(0)
