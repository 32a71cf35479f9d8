"""The inbox's picture of a run and its time travel, in Debian's Chromium with Playwright:
node colours follow the run live, a click shows what a node did, a button rewinds."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from playwright.async_api import Browser, Locator, Page, expect
from pydantic import BaseModel

from baton import App, RequestInput, ResumabilityConfig, Workflow
from baton.server.catalog import load_app
from tests.server.conftest import EXAMPLES, Live, StartLive
from tests.server.test_web_page import browser, screenshot

__all__ = ["browser"]  # the fixture, shared with the other page tests

pytestmark = pytest.mark.browser


class Go(BaseModel):
    proceed: bool


def gated_app(gate: asyncio.Event) -> App:
    """START -> prepare -> slow (waits for `gate`) -> confirm (asks) -> finish."""

    def prepare(node_input: str) -> str:  # START hands the message's text to a str
        return f"prepared {node_input}"

    async def slow(node_input: Any) -> str:
        await gate.wait()
        return "slow part done"

    def confirm(node_input: Any) -> RequestInput:
        return RequestInput(interrupt_id="go", message="Proceed?", response_schema=Go)

    def finish(node_input: Any) -> str:
        return f"finished proceed={node_input['proceed']}"

    return App(
        name="gated",
        root_agent=Workflow(name="gated_wf", edges=[("START", prepare, slow, confirm, finish)]),
        resumability_config=ResumabilityConfig(is_resumable=True),
    )


async def waiting_at_go(start_live: StartLive) -> tuple[Live, str, str]:
    """A server whose one session's run waits at 'go': the server, session and run."""
    gate = asyncio.Event()
    gate.set()
    live: Live = await start_live(apps=[gated_app(gate)], web=True)
    sid = await live.create("gated", "user")
    run = (await live.start("gated", "user", sid, "one"))[-1]["invocationId"]
    return live, sid, str(run)


def node(page: Page, name: str) -> Locator:
    return page.locator(f"svg.run-graph g.node[data-node='{name}']")


async def test_the_graph_colours_follow_the_run_and_a_click_shows_a_node(
    start_live: StartLive, browser: Browser
) -> None:
    gate = asyncio.Event()
    live: Live = await start_live(apps=[gated_app(gate)], web=True)
    sid = await live.create("gated", "user")
    page = await browser.new_page(viewport={"width": 1280, "height": 1000})
    await page.goto(f"{live.url}/#/session/gated/{sid}")
    for name in ("prepare", "slow", "confirm", "finish"):
        await expect(node(page, name)).to_have_attribute("data-state", "idle")

    running = asyncio.create_task(live.start("gated", "user", sid, "order 7"))
    await expect(node(page, "prepare")).to_have_attribute("data-state", "done")
    await expect(node(page, "slow")).to_have_attribute("data-state", "running")
    await expect(node(page, "confirm")).to_have_attribute("data-state", "idle")
    await screenshot(page, "graph-running")

    gate.set()
    await running
    await expect(node(page, "slow")).to_have_attribute("data-state", "done")
    await expect(node(page, "confirm")).to_have_attribute("data-state", "waiting")
    await expect(node(page, "finish")).to_have_attribute("data-state", "idle")

    await node(page, "confirm").click()
    detail = page.locator("#node-detail")
    await expect(detail).to_contain_text("Proceed?")
    await expect(detail.locator("a.answer-link")).to_contain_text("Proceed?")
    await node(page, "prepare").click()
    await expect(detail).to_contain_text("prepared order 7")
    await screenshot(page, "graph-waiting")

    respond = f"/apps/gated/users/user/sessions/{sid}/interrupts/go/respond"
    answered = await live.client.post(respond, json={"response": {"proceed": True}})
    assert answered.status_code == 200, answered.text
    await expect(node(page, "finish")).to_have_attribute("data-state", "done")
    await expect(node(page, "confirm")).to_have_attribute("data-state", "done")
    await expect(node(page, "__END__")).to_have_attribute("data-state", "done")
    # The chosen node stays chosen across live reloads, with what it did.
    await expect(detail).to_contain_text("prepared order 7")
    await node(page, "confirm").click()
    await expect(detail).to_contain_text("proceed")
    await expect(detail).to_contain_text("user")  # who answered
    await screenshot(page, "graph-done")


async def test_the_rewind_button_undoes_a_run_and_closes_its_question(
    start_live: StartLive, browser: Browser
) -> None:
    live, sid, first = await waiting_at_go(start_live)
    page = await browser.new_page(viewport={"width": 1280, "height": 1000})
    page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
    await page.goto(f"{live.url}/#/session/gated/{sid}")
    await expect(node(page, "confirm")).to_have_attribute("data-state", "waiting")

    await page.locator(f"#checkpoints button.rewind[data-run='{first}']").click()
    await expect(page.locator("#session-body tr", has_text=first).locator(".badge")).to_have_text(
        "rewound"
    )
    await expect(node(page, "confirm")).to_have_attribute("data-state", "idle")
    await expect(page.locator(f"button.rewind[data-run='{first}']")).to_have_count(0)
    await page.goto(f"{live.url}/#/")
    await expect(page.locator("#count")).to_have_text("0")
    await screenshot(page, "rewound")


async def test_a_fork_at_a_question_opens_a_session_answered_differently(
    start_live: StartLive, browser: Browser
) -> None:
    live, sid, _ = await waiting_at_go(start_live)
    respond = f"/apps/gated/users/user/sessions/{sid}/interrupts/go/respond"
    assert (
        await live.client.post(respond, json={"response": {"proceed": True}})
    ).status_code == 200
    page = await browser.new_page(viewport={"width": 1280, "height": 1000})
    await page.goto(f"{live.url}/#/session/gated/{sid}")
    await expect(node(page, "finish")).to_have_attribute("data-state", "done")
    rows = page.locator("#checkpoints tbody tr")
    # Before the run, after each of its 4 steps, its question (after slow's step), after it.
    await expect(rows).to_have_count(7)
    question = rows.nth(3)
    await expect(question).to_contain_text("asks: Proceed?")
    await expect(question).to_contain_text("proceed")
    await expect(question).to_contain_text("by user")

    await question.locator("button.fork").click()
    await expect(page).not_to_have_url(f"{live.url}/#/session/gated/{sid}")
    fork = page.url.rsplit("/", 1)[-1]
    await expect(page.locator("#session-title")).to_contain_text(fork)
    await expect(node(page, "confirm")).to_have_attribute("data-state", "waiting")
    await expect(node(page, "finish")).to_have_attribute("data-state", "idle")
    await screenshot(page, "forked")

    await page.goto(f"{live.url}/#/")
    card = page.locator(f"form.card[data-session='{fork}'][data-interrupt='go']")
    await card.locator("input[name=proceed][value=no]").check()
    await card.locator("button[type=submit]").click()
    await expect(card).to_have_count(0)  # answered: the question is no longer open
    await page.goto(f"{live.url}/#/session/gated/{fork}")
    await expect(node(page, "finish")).to_have_attribute("data-state", "done")
    await node(page, "finish").click()
    await expect(page.locator("#node-detail")).to_contain_text("finished proceed=False")
    # The source session still shows its own answer.
    await page.goto(f"{live.url}/#/session/gated/{sid}")
    await node(page, "finish").click()
    await expect(page.locator("#node-detail")).to_contain_text("finished proceed=True")


async def test_a_fork_after_a_step_reruns_the_run_from_there(
    start_live: StartLive, browser: Browser
) -> None:
    gate = asyncio.Event()
    gate.set()
    live: Live = await start_live(apps=[gated_app(gate)], web=True)
    sid = await live.create("gated", "user")
    await live.start("gated", "user", sid, "one")
    respond = f"/apps/gated/users/user/sessions/{sid}/interrupts/go/respond"
    assert (
        await live.client.post(respond, json={"response": {"proceed": True}})
    ).status_code == 200
    gate.clear()  # slow would block now: the fork after its step must not run it again
    page = await browser.new_page(viewport={"width": 1280, "height": 1000})
    await page.goto(f"{live.url}/#/session/gated/{sid}")
    rows = page.locator("#checkpoints tbody tr")
    await expect(rows).to_have_count(7)
    after_slow = rows.nth(2)
    await expect(after_slow).to_contain_text('after slow@1: "slow part done"')
    button = after_slow.locator("button.fork")
    await expect(button).to_have_text("Fork here to re-run from this step")
    await screenshot(page, "checkpoints-steps")

    await button.click()
    await expect(page).not_to_have_url(f"{live.url}/#/session/gated/{sid}")
    fork = page.url.rsplit("/", 1)[-1]
    await expect(page.locator("#session-title")).to_contain_text(fork)
    # The server continues the fork from that step: confirm asks again, nothing before it ran.
    await expect(node(page, "slow")).to_have_attribute("data-state", "done")
    await expect(node(page, "confirm")).to_have_attribute("data-state", "waiting")
    await expect(node(page, "finish")).to_have_attribute("data-state", "idle")
    await page.goto(f"{live.url}/#/")
    card = page.locator(f"form.card[data-session='{fork}'][data-interrupt='go']")
    await card.locator("input[name=proceed][value=no]").check()
    await card.locator("button[type=submit]").click()
    await expect(card).to_have_count(0)
    await page.goto(f"{live.url}/#/session/gated/{fork}")
    await node(page, "finish").click()
    await expect(page.locator("#node-detail")).to_contain_text("finished proceed=False")
    # The source session is unchanged.
    await page.goto(f"{live.url}/#/session/gated/{sid}")
    await node(page, "finish").click()
    await expect(page.locator("#node-detail")).to_contain_text("finished proceed=True")


async def test_an_agents_graph_shows_what_the_agent_did(
    start_live: StartLive, browser: Browser
) -> None:
    live: Live = await start_live(apps=[load_app(EXAMPLES / "approval_agent")], web=True)
    sid = await live.create("approval_agent", "user")
    await live.start("approval_agent", "user", sid, "Please refund order 42, it arrived broken.")
    page = await browser.new_page(viewport={"width": 1280, "height": 1000})
    await page.goto(f"{live.url}/#/session/approval_agent/{sid}")
    await expect(node(page, "refund_agent")).to_have_attribute("data-state", "waiting")
    await node(page, "refund_agent").click()
    detail = page.locator("#node-detail")
    await expect(detail).to_contain_text("lookup_order")
    await expect(detail.locator("a.answer-link")).to_contain_text("issue_refund")
