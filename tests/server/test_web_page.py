"""The web inbox, driven end to end in Debian's Chromium with Playwright."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from tests.server.conftest import Live, StartLive, example_app

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(os.environ.get("BATON_SCREENSHOTS", "/tmp/baton-screenshots"))

pytestmark = pytest.mark.browser


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMIUM} is missing; CI must install Debian's chromium package.")
        pytest.skip(f"{CHROMIUM} is missing; `apt-get install chromium` to run browser tests.")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield launched
        await launched.close()


async def start_paused_run(live: Live, text: str) -> str:
    sid = await live.create("expense_approval", "user")
    await live.start("expense_approval", "user", sid, text)
    return sid


async def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


async def test_inbox_form_answers_a_paused_run_and_it_completes(
    start_live: StartLive, browser: Browser
) -> None:
    live: Live = await start_live(apps=[example_app()], web=True)
    sid = await start_paused_run(live, "120.5 taxi to the airport")
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(live.url)
    card = page.locator(f"form.card[data-session='{sid}'][data-interrupt='review_0']")
    await expect(card.locator("h3")).to_have_text("Approve 120.50 for 'taxi to the airport'?")
    await expect(page.locator("#live")).to_have_text("live")

    # A schema failure is shown on the card, and the question stays open.
    await card.locator("input[name=adjusted_amount]").fill("-5")
    await card.locator("button[type=submit]").click()
    await expect(card.locator(".error")).to_contain_text("adjusted_amount")

    # A second run, started elsewhere, appears without a reload.
    other = await start_paused_run(live, "9 pens")
    await expect(page.locator(f"form.card[data-session='{other}']")).to_have_count(1)

    await card.locator("input[name=approved]").check()
    await card.locator("input[name=comment]").fill("ok, capped")
    await card.locator("select[name=category]").select_option(label="travel")
    await card.locator("input[name=adjusted_amount]").fill("100")
    await card.locator("select[name=method]").select_option(label="bank_transfer")
    await screenshot(page, "inbox")
    await card.locator("button[type=submit]").click()

    done = page.locator("#activity li[data-status=completed]")
    await expect(done).to_contain_text("paid 100.00 for 'taxi to the airport' via bank_transfer")
    await expect(card).to_have_count(0)
    await expect(page.locator("#count")).to_have_text("1")

    await done.locator("a").click()
    view = page.locator("#session-view")
    await expect(view).to_be_visible()
    answered = view.locator("tr", has_text="answered")
    await expect(answered).to_contain_text('"approved":true')
    await expect(answered).to_contain_text("user")
    await expect(view.locator("tr", has_text="pay@1")).to_contain_text("completed")
    await screenshot(page, "session")


async def test_inbox_starts_a_run_and_accepts_raw_json(
    start_live: StartLive, browser: Browser
) -> None:
    live: Live = await start_live(apps=[example_app()], web=True)
    page = await browser.new_page()
    await page.goto(live.url)
    await page.locator("#start-message").fill("42 books")
    await page.locator("#start-form button").click()
    await expect(page.locator("#activity li[data-status=paused]")).to_contain_text("started")
    card = page.locator("form.card[data-interrupt='review_0']")
    await card.locator("details.raw summary").click()
    await card.locator("textarea.raw-json").fill('{"approved": false, "adjusted_amount": 30}')
    await card.locator("button[type=submit]").click()
    # Rejected: the claim is revised and asked again under the next id.
    revised = page.locator("form.card[data-interrupt='review_1'] h3")
    await expect(revised).to_have_text("Approve 30.00 for 'books'?")
    recent = page.locator("#sessions li a")
    await expect(recent).to_have_count(1)
    await recent.click()
    await expect(page.locator("#session-view tr", has_text="revise@1")).to_contain_text("completed")


async def test_inbox_with_api_keys_asks_for_one_and_then_goes_live(
    start_live: StartLive, browser: Browser
) -> None:
    live: Live = await start_live(
        apps=[example_app()], keys=["user:k1"], web=True, headers={"X-API-Key": "k1"}
    )
    sid = await start_paused_run(live, "7 tea")
    page = await browser.new_page()
    await page.goto(live.url)
    await expect(page.locator("#activity")).to_contain_text("missing or unknown API key")
    await expect(page.locator("#live")).to_have_text("offline")
    await page.locator("#api-key").fill("k1")
    await page.locator("#api-key").press("Enter")
    await expect(page.locator("#live")).to_have_text("live")
    await expect(page.locator(f"form.card[data-session='{sid}'] h3")).to_have_text(
        "Approve 7.00 for 'tea'?"
    )
