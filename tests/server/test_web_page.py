"""The web inbox, driven end to end in Debian's Chromium with Playwright."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect
from pydantic import BaseModel, JsonValue

from baton import App, LlmAgent, LongRunningFunctionTool, RequestInput, ResumabilityConfig, Workflow
from baton.models import ScriptedModel
from baton.tools import FunctionTool
from baton.tools.confirmation import REJECTED
from baton.types import FunctionCall
from tests.server.conftest import Live, StartLive, example_app
from tests.server.test_artifacts import PDF, report_app
from tests.server.test_ui_widgets import shop_app

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
# How long an expectation on a page waits for it to come true. Playwright's 5 s default
# was once too short for a page to render under a loaded machine's scheduling (the
# whole suite beside other work); a page that never gets there still fails.
expect.set_options(timeout=30_000)

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

    # Nothing is decided for the reviewer: the required yes/no starts unpicked and says so.
    approved = card.locator("input[name=approved]")
    await expect(approved).to_have_count(2)
    for box in await approved.all():
        await expect(box).not_to_be_checked()
    await expect(card.locator(".field", has_text="Approved")).to_contain_text("required")
    await card.locator("button[type=submit]").click()
    await expect(card.locator(".error")).to_contain_text("fill in Approved (required)")

    # A schema failure is shown on the card, and the question stays open.
    await card.locator("input[name=approved][value=yes]").check()
    await card.locator("input[name=adjusted_amount]").fill("-5")
    await card.locator("button[type=submit]").click()
    await expect(card.locator(".error")).to_contain_text("adjusted_amount")

    # A second run, started elsewhere, appears without a reload.
    other = await start_paused_run(live, "9 pens")
    await expect(page.locator(f"form.card[data-session='{other}']")).to_have_count(1)

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
    # The nodes table's row (the checkpoints table has one "after pay@1" too).
    await expect(view.locator("tr", has_text="pay@1").filter(has_text="completed")).to_have_count(1)
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
    revised = page.locator("#session-view tr", has_text="revise@1").filter(has_text="completed")
    await expect(revised).to_have_count(1)  # the nodes table's row, not its checkpoint


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
    await expect(page.locator("#live")).to_have_attribute("data-state", "offline")
    await page.locator("#api-key").fill("k1")
    await page.locator("#api-key").press("Enter")
    await expect(page.locator("#live")).to_have_text("live")
    await expect(page.locator(f"form.card[data-session='{sid}'] h3")).to_have_text(
        "Approve 7.00 for 'tea'?"
    )


class Address(BaseModel):
    street: str
    country: Literal["FR", "DE"] = "FR"


class Order(BaseModel):
    customer: str
    priority: Literal["low", "high"] = "low"
    count: int
    express: bool = False
    address: Address
    lines: list[str] = []
    note: str | None = None


def ask_order(node_input: Any) -> RequestInput:
    return RequestInput(interrupt_id="order", message="Which order?", response_schema=Order)


def ship(node_input: Any) -> str:
    return f"shipped {len(node_input['lines'])} lines to {node_input['customer']}"


def declined_once() -> Any:
    """A `charge` node that fails on its first call only (the card is declined, then not)."""
    calls: list[str] = []

    def charge(node_input: Any) -> str:
        calls.append(node_input["customer"])
        if len(calls) == 1:
            raise RuntimeError("the card was declined")
        return f"charged {node_input['customer']}"

    return charge


def order_app(name: str, then: Any) -> App:
    """START -> ask_order (an object schema: nested object, enums, an array) -> `then`."""
    return App(
        name=name,
        root_agent=Workflow(name=f"{name}_wf", edges=[("START", ask_order, then)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


async def open_inbox_on_order(
    start_live: StartLive, browser: Browser, app: App
) -> tuple[Live, Page, str]:
    """Serve `app` with the page, pause a run on its order question, open the inbox."""
    live: Live = await start_live(apps=[app], web=True)
    sid = await live.create(app.name, "user")
    await live.start(app.name, "user", sid)
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(live.url)
    return live, page, sid


async def test_nested_schema_form_answers_and_an_empty_inbox_says_so(
    start_live: StartLive, browser: Browser
) -> None:
    live, page, sid = await open_inbox_on_order(start_live, browser, order_app("orders", ship))
    card = page.locator(f"form.card[data-session='{sid}']")
    await card.locator("input[name=customer]").fill("Ada")
    await card.locator("select[name=priority]").select_option(label="high")
    await card.locator("input[name=count]").fill("3")
    await card.locator("input[name=express]").check()
    await card.locator("fieldset input[name=street]").fill("1 Main St")
    await card.locator("fieldset select[name=country]").select_option(label="DE")
    await card.locator("textarea[name=lines]").fill('["tea", "cups"]')
    await screenshot(page, "nested-form")
    await card.locator("button[type=submit]").click()
    answer = {
        "address": {"country": "DE", "street": "1 Main St"},
        "count": 3,
        "customer": "Ada",
        "express": True,
        "lines": ["tea", "cups"],
        "priority": "high",
    }  # the optional note, left empty, is left out rather than sent as ""
    done = page.locator("#activity li[data-status=completed]")
    await expect(done).to_contain_text("ship: shipped 2 lines to Ada")
    timeline = await live.client.get(f"/apps/orders/users/user/sessions/{sid}/timeline")
    asked = [n["output"] for n in timeline.json()["nodes"] if n["node"] == "ask_order"]
    assert asked == [answer]
    await expect(page.locator("#empty")).to_be_visible()
    await expect(page.locator("#empty")).to_have_text("Nothing is waiting for an answer.")
    await expect(page.locator("#count")).to_have_text("0")
    await screenshot(page, "empty-inbox")


async def test_a_run_that_fails_after_the_answer_shows_why_and_continues_from_the_page(
    start_live: StartLive, browser: Browser
) -> None:
    app = order_app("payments", declined_once())
    live, page, sid = await open_inbox_on_order(start_live, browser, app)
    card = page.locator(f"form.card[data-session='{sid}']")
    await card.locator("details.raw summary").click()
    await card.locator("textarea.raw-json").fill('{"customer": "Bo", "count": 1}')
    await card.locator("button[type=submit]").click()
    await expect(card.locator(".error")).to_contain_text("'address' is a required property")
    await card.locator("textarea.raw-json").fill(
        '{"customer": "Bo", "count": 1, "address": {"street": "2 Side St"}}'
    )
    await card.locator("button[type=submit]").click()
    failed = page.locator("#activity li[data-status=failed]")
    await expect(failed).to_contain_text("RuntimeError: the card was declined")
    # The long line wraps inside the column instead of widening the page.
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1280
    await failed.locator("a").click()
    run = page.locator("#session-view table").first.locator("tbody tr")
    await expect(run).to_contain_text("failed")
    await expect(run).to_contain_text("RuntimeError: the card was declined")
    await screenshot(page, "failed-run")

    await run.locator("button.continue").click()
    await expect(run).to_contain_text("completed")
    await expect(run.locator("button.continue")).to_have_count(0)
    continued = page.locator("#activity li[data-status=completed]")
    await expect(continued).to_contain_text("continued → run completed · charge: charged Bo")
    timeline = await live.client.get(f"/apps/payments/users/user/sessions/{sid}/timeline")
    asked = [e for e in timeline.json()["entries"] if e["kind"] == "asked"]
    assert len(asked) == 1  # the answered question was not asked again
    await screenshot(page, "continued-run")


def issue_refund(order_id: str, amount: float) -> dict[str, str]:
    """Refund an order; a person approves it first."""
    return {"status": "waiting for approval", "order_id": order_id}


def refund_app() -> App:
    """An LLM agent (scripted) whose refund tool needs a person's answer."""
    model = ScriptedModel(
        responses=[
            FunctionCall(id="c1", name="issue_refund", args={"order_id": "7", "amount": 20.0}),
            "Your refund waits for approval.",  # the model's reply to the tool's interim result
            "The refund is **done**: see [the order](https://shop.example/7)"
            " <img src=x onerror=alert(1)> [bad](javascript:alert(1))",
        ]
    )
    tool = LongRunningFunctionTool(func=issue_refund, response_schema=RefundDecision)
    agent = LlmAgent(name="refunds", model=model, tools=[tool])
    return App(name="refunds", root_agent=agent)


class RefundDecision(BaseModel):
    approved: bool
    note: str = ""


async def test_an_agents_tool_call_is_answered_from_the_inbox(
    start_live: StartLive, browser: Browser
) -> None:
    live: Live = await start_live(apps=[refund_app()], web=True)
    sid = await live.create("refunds", "user")
    await live.start("refunds", "user", sid, "refund order 7")
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(live.url)

    card = page.locator(f"form.card[data-session='{sid}'][data-interrupt='c1']")
    await expect(card.locator("h3")).to_have_text("issue_refund is waiting for your answer")
    await expect(card.locator("pre.payload")).to_contain_text('"order_id": "7"')
    # The tool declared its answer: a yes/no form, not a free-text box that "yes" fails.
    await expect(card.locator(".field", has_text="Approved")).to_contain_text("required")
    await card.locator("input[name=approved][value=yes]").check()
    await screenshot(page, "tool-call-card")
    await card.locator("button[type=submit]").click()

    done = page.locator("#activity li[data-status=completed]")
    await expect(done).to_contain_text("refunds: The refund is **done**")
    session = await live.client.get(f"/apps/refunds/users/user/sessions/{sid}")
    answers = [
        p["functionResponse"]
        for e in session.json()["events"]
        if e["author"] == "user"
        for p in e.get("content", {}).get("parts", [])
        if "functionResponse" in p
    ]
    assert answers == [
        {"id": "c1", "name": "issue_refund", "response": {"result": {"approved": True, "note": ""}}}
    ]

    # The session's history names the question, the tool's result and the answer, as the
    # terminal does; the agent's message is Markdown, rendered without running any markup.
    await done.locator("a").click()
    view = page.locator("#session-view")
    await expect(view.locator("tr", has_text="asks [c1]")).to_contain_text(
        'may issue_refund(order_id="7", amount=20.0) go ahead?'
    )
    await expect(view.locator("tr", has_text="issue_refund returned")).to_contain_text(
        '{"status":"waiting for approval","order_id":"7"}'
    )
    await expect(view.locator(".md", has_text="Your refund waits for approval.")).to_have_count(1)
    await expect(view.locator("tr", has_text="answered [c1]")).to_contain_text(
        '{"approved":true,"note":""}'
    )
    await expect(view.locator("tr", has_text="answered [c1]")).to_contain_text("user")
    message = view.locator(".md", has_text="The refund is")
    await expect(message.locator("strong")).to_have_text("done")
    await expect(message.locator("a")).to_have_attribute("href", "https://shop.example/7")
    await expect(message).to_contain_text("<img src=x onerror=alert(1)>")
    await expect(message).to_contain_text("[bad](javascript:alert(1))")
    assert await view.locator("img").count() == 0
    await expect(view.locator("tr", has_text="null")).to_have_count(0)
    await screenshot(page, "llm-session")


class Pick(BaseModel):
    size: Literal["S", "M", "L"]
    gift: bool
    note: str = ""


def ask_pick(node_input: Any) -> RequestInput:
    return RequestInput(interrupt_id="pick", message="Which size?", response_schema=Pick)


def picked(node_input: Any) -> str:
    return f"size {node_input['size']}, gift {node_input['gift']}"


def pick_app(name: str) -> App:
    return App(
        name=name,
        root_agent=Workflow(name=f"{name}_wf", edges=[("START", ask_pick, picked)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


async def test_six_apps_in_two_tabs_stay_live_and_usable(
    start_live: StartLive, browser: Browser
) -> None:
    """Twelve per-app streams would exhaust the browser's six connections per host; one
    stream per page leaves room for Start, Submit and the session list."""
    names = [f"shop{i}" for i in range(1, 7)]
    live: Live = await start_live(apps=[pick_app(n) for n in names], web=True)
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    first, second = await context.new_page(), await context.new_page()
    for page in (first, second):
        await page.goto(live.url)
        await expect(page.locator("#live")).to_have_text("live")
        await expect(page.locator("#start-app option")).to_have_count(6)

    await second.locator("#start-app").select_option("shop6")
    await second.locator("#start-message").fill("a shirt")
    await second.locator("#start-form button").click()
    await expect(second.locator("#activity li[data-status=paused]")).to_contain_text("started")

    card = first.locator("form.card[data-interrupt='pick']")
    await expect(card).to_have_count(1)
    # A required choice without a default is not preselected; the form says what is missing.
    await expect(card.locator("select[name=size]")).to_have_value("")
    await card.locator("button[type=submit]").click()
    await expect(card.locator(".error")).to_contain_text("fill in Size, Gift (required)")
    await card.locator("select[name=size]").select_option(label="M")
    await card.locator("input[name=gift][value=no]").check()
    await card.locator("button[type=submit]").click()
    done = first.locator("#activity li[data-status=completed]")
    await expect(done).to_contain_text("picked: size M, gift False")
    for page in (first, second):
        await expect(page.locator("#count")).to_have_text("0")
        await expect(page.locator("#sessions li")).to_have_count(1)
        await expect(page.locator("#live")).to_have_text("live")
    await context.close()


async def test_the_badge_tells_the_truth_and_the_page_reconnects(
    start_live: StartLive, browser: Browser
) -> None:
    live: Live = await start_live(apps=[example_app()], web=True)
    page = await browser.new_page()
    await page.route("**/inbox/stream", lambda route: route.abort())  # the network is down
    await page.goto(live.url)
    badge = page.locator("#live")
    await expect(badge).to_have_attribute("data-state", "offline")
    await expect(badge).to_contain_text("retry in")
    await page.unroute("**/inbox/stream")  # back: the next retry (backoff) goes live
    await expect(badge).to_have_text("live")
    sid = await start_paused_run(live, "3 stamps")
    await expect(page.locator(f"form.card[data-session='{sid}']")).to_have_count(1)
    assert live.app is not None
    live.app.state.drain()  # the server shuts down: its streams end, the badge says so
    await expect(badge).to_have_attribute("data-state", "offline")


async def test_phone_width_has_no_horizontal_overflow(
    start_live: StartLive, browser: Browser
) -> None:
    live: Live = await start_live(apps=[example_app()], web=True)
    sid = await start_paused_run(live, "120.5 taxi to the airport with a very long description")
    page = await browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True)
    await page.goto(live.url)
    card = page.locator(f"form.card[data-session='{sid}']")
    await expect(card.locator("h3")).to_contain_text("Approve 120.50")
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    box = await card.bounding_box()
    assert box is not None
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= 390
    await screenshot(page, "phone-inbox")
    await card.locator("input[name=approved][value=yes]").check()
    await card.locator("button[type=submit]").click()
    done = page.locator("#activity li[data-status=completed]")
    await done.locator("a").click()
    await expect(page.locator("#session-view")).to_be_visible()
    paid = page.locator("#session-view tr", has_text="pay@1").filter(has_text="completed")
    await expect(paid).to_have_count(1)
    assert await page.evaluate("document.documentElement.scrollWidth") <= 390
    await screenshot(page, "phone-session")


def transfer(amount: int, to: str) -> dict[str, JsonValue]:
    """Transfer money; a person confirms each call first."""
    return {"sent": amount, "to": to}


def confirmation_app() -> App:
    """An LLM agent (scripted) whose transfer tool requires confirmation."""
    model = ScriptedModel(
        responses=[
            FunctionCall(id="t1", name="transfer", args={"amount": 500, "to": "bob"}),
            "Transfer handled.",
        ]
    )
    agent = LlmAgent(
        name="bank", model=model, tools=[FunctionTool(transfer, require_confirmation=True)]
    )
    return App(name="bank", root_agent=agent)


@pytest.mark.parametrize("decision", ["Approve", "Reject"])
async def test_a_tool_confirmation_is_approved_or_rejected_from_the_inbox(
    start_live: StartLive, browser: Browser, decision: str
) -> None:
    live: Live = await start_live(apps=[confirmation_app()], web=True)
    sid = await live.create("bank", "user")
    await live.start("bank", "user", sid, "pay bob 500")
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(live.url)

    card = page.locator(f"form.card[data-session='{sid}'][data-interrupt='adk-confirm-t1']")
    await expect(card.locator("h3")).to_have_text("transfer needs your approval")
    await expect(card.locator("pre.payload")).to_contain_text('"amount": 500')
    await screenshot(page, "tool-confirmation-card")
    await card.locator("button", has_text=decision).click()

    done = page.locator("#activity li[data-status=completed]")
    await expect(done).to_contain_text("bank: Transfer handled.")
    session = await live.client.get(f"/apps/bank/users/user/sessions/{sid}")
    results = [
        p["functionResponse"]["response"]
        for e in session.json()["events"]
        if e["author"] == "bank"
        for p in e.get("content", {}).get("parts", [])
        if "functionResponse" in p
    ]
    expected = {"sent": 500, "to": "bob"} if decision == "Approve" else REJECTED
    assert results == [expected]


def ask_with_deadline(node_input: Any) -> RequestInput:
    return RequestInput(
        interrupt_id="sign",
        message="Sign the contract?",
        response_schema={"type": "boolean"},
        timeout=45 * 60,
        on_timeout=False,
    )


def signed(node_input: Any) -> str:
    return f"signed: {node_input}"


async def test_a_question_with_a_deadline_says_when_it_expires(
    start_live: StartLive, browser: Browser
) -> None:
    app = App(
        name="contracts",
        root_agent=Workflow(name="contracts", edges=[("START", ask_with_deadline, signed)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )
    live: Live = await start_live(apps=[app], web=True)
    sid = await live.create("contracts", "user")
    await live.start("contracts", "user", sid)
    (pending,) = (await live.client.get("/apps/contracts/users/user/pending")).json()
    assert pending["expiresAt"] == pending["createdAt"] + 45 * 60
    assert (pending["onTimeout"], pending["answersOnTimeout"]) == (False, True)
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(live.url)

    card = page.locator(f"form.card[data-session='{sid}'][data-interrupt='sign']")
    await expect(card.locator(".deadline")).to_have_text(
        "expires in 45 min (then answered by its default)"
    )


async def test_the_readmes_user_opens_from_the_url(start_live: StartLive, browser: Browser) -> None:
    live: Live = await start_live(apps=[example_app()], web=True)
    sid = await live.create("expense_approval", "ann")
    await live.start("expense_approval", "ann", sid, "42 taxi")
    page = await browser.new_page()
    await page.goto(f"{live.url}/?user=ann")
    await expect(page.locator("#user")).to_have_value("ann")
    await expect(page.locator(f"form.card[data-session='{sid}'] h3")).to_have_text(
        "Approve 42.00 for 'taxi'?"
    )


async def test_search_and_status_filter_the_inbox_and_sessions(
    start_live: StartLive, browser: Browser
) -> None:
    live: Live = await start_live(apps=[example_app()], web=True)
    taxi = await start_paused_run(live, "120 taxi")
    pens = await start_paused_run(live, "9 pens")
    done = await start_paused_run(live, "5 tea")
    respond = f"/apps/expense_approval/users/user/sessions/{done}/interrupts/review_0/respond"
    assert (await live.client.post(respond, json={"response": {"approved": True}})).is_success
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(live.url)
    cards = page.locator("form.card")
    await expect(cards).to_have_count(2)
    await expect(page.locator("#sessions li")).to_have_count(3)

    await page.locator("#search").fill("FOR 'PENS")  # question text, any case
    await expect(cards).to_have_count(1)
    await expect(page.locator(f"form.card[data-session='{pens}']")).to_have_count(1)
    await page.locator("#search").fill(taxi[:8])  # a session id
    await expect(page.locator(f"form.card[data-session='{taxi}']")).to_have_count(1)
    await expect(page.locator("#sessions li")).to_have_count(1)
    await page.locator("#search").fill("")

    await page.locator("#status-filter").select_option("completed")
    await expect(cards).to_have_count(0)
    await expect(page.locator("#empty")).to_have_text("Nothing matches the search or status.")
    await expect(page.locator("#sessions li")).to_have_count(1)
    await expect(page.locator("#sessions li")).to_contain_text(done[:8])
    await page.locator("#status-filter").select_option("paused")
    await expect(cards).to_have_count(2)
    await expect(page.locator("#sessions li[data-status=paused]")).to_have_count(2)
    await expect(page.locator("#sessions li")).to_have_count(2)


async def test_dark_mode_follows_the_system_setting(
    start_live: StartLive, browser: Browser
) -> None:
    live: Live = await start_live(apps=[example_app()], web=True)
    await start_paused_run(live, "12 lunch")
    page = await browser.new_page(color_scheme="dark", viewport={"width": 1280, "height": 900})
    await page.goto(live.url)
    await expect(page.locator("form.card")).to_have_count(1)
    background = await page.evaluate("getComputedStyle(document.body).backgroundColor")
    card = await page.locator("form.card").evaluate("e => getComputedStyle(e).backgroundColor")
    assert background == "rgb(18, 21, 28)"
    assert card == "rgb(27, 32, 43)"
    await screenshot(page, "dark-inbox")


async def test_a_reviewer_downloads_the_runs_files_from_the_card_and_the_session(
    start_live: StartLive, browser: Browser
) -> None:
    live: Live = await start_live(
        apps=[report_app()], keys=["user:k1"], web=True, headers={"X-API-Key": "k1"}
    )
    sid = await live.create("reports", "user")
    await live.start("reports", "user", sid)
    page = await browser.new_page(accept_downloads=True)
    await page.goto(live.url)
    await page.locator("#api-key").fill("k1")
    await page.locator("#api-key").press("Enter")

    card = page.locator(f"form.card[data-session='{sid}']")
    links = card.locator(".artifacts a.artifact")
    await expect(links).to_have_text(["reports/q3.pdf", "user:notes.txt"])
    async with page.expect_download() as downloading:
        await links.first.click()
    saved = await (await downloading.value).path()
    assert Path(saved).read_bytes() == PDF
    assert (await downloading.value).suggested_filename == "q3.pdf"

    await card.locator(".meta a").click()
    files = page.locator("#session-body table").last
    await expect(files.locator("td[data-label=file]")).to_have_text(
        ["reports/q3.pdf", "user:notes.txt"]
    )
    await expect(files.locator("td[data-label=type]")).to_have_text(
        ["application/pdf", "text/plain"]
    )
    async with page.expect_download() as downloading:
        await files.locator("td[data-label=versions] a", has_text="v0").last.click()
    assert Path(await (await downloading.value).path()).read_text() == "remember"
    await screenshot(page, "session-files")


async def test_a_sessions_history_names_the_widgets_its_events_show(
    start_live: StartLive, browser: Browser
) -> None:
    """A widget (`ctx.render_ui_widget`) is listed in the history under its event: its
    id, its provider and the resource it shows, its whole payload unfolding below."""
    live: Live = await start_live(apps=[shop_app()], web=True)
    sid = await live.create("shop", "ann")
    await live.start("shop", "ann", sid)
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(f"{live.url}/?user=ann#/session/shop/{sid}")

    row = page.locator("#session-view tr", has_text="shows widget")
    await expect(row).to_have_count(1)
    await expect(row.locator(".kind.widget")).to_have_text("widget")
    await expect(row.locator(".summary")).to_have_text("shows widget 'cart-0' (mcp: ui://cart/0)")
    await expect(row).to_contain_text("pick")
    await row.locator("details.value > summary").click()
    uri = row.locator(".j-row", has_text="resource_uri").last
    await expect(uri).to_have_text('resource_uri: "ui://cart/0"')
    await screenshot(page, "session-widget")
