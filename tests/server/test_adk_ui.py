"""The reference's own web UI, served from google-adk's package files, works against baton.

google-adk lives in its own venv (`.venv-adk`, made by `make adk-ui-venv`, i.e.
scripts/adk_venv.sh); baton never imports it. Its UI is served as the README says
(scripts/adk_ui.py, pointed at a `baton api_server --trace-to-ui` process) and driven in
Debian's Chromium as a person would: a run of the expense example is answered from the
Form tab with only the required field set, a refused answer is shown, the graph is
drawn and the Traces tab lists baton's spans.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.server.conftest import EXAMPLES
from tests.server.processes import BATON, free_port, serving
from tests.server.test_web_page import browser as browser
from tests.server.test_web_page import screenshot

ROOT = Path(__file__).parents[2]
UI_GLOB = "lib/python*/site-packages/google/adk/cli/browser/index.html"

pytestmark = pytest.mark.browser


def _found_ui() -> bool:
    return any((ROOT / ".venv-adk").glob(UI_GLOB))


@pytest.fixture(scope="session")
def adk_ui() -> None:
    """google-adk's UI files in .venv-adk, installed once (cached) when missing."""
    if not _found_ui():
        script = ROOT / "scripts" / "adk_venv.sh"
        subprocess.run(["bash", str(script)], check=False, timeout=900)
    if _found_ui():
        return
    reason = (
        "google-adk could not be installed into .venv-adk (see .venv-adk.log); "
        "run `make adk-ui-venv` with access to a package index"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI=true requires it.")
    pytest.skip(f"{reason} to run the reference UI test.")


async def answer_form(page: Page, adjusted_amount: str | None) -> None:
    await page.locator("#approved").check()
    if adjusted_amount is not None:
        await page.locator("#adjusted_amount").fill(adjusted_amount)
    await page.get_by_role("button", name="Submit").click()


@pytest.mark.usefixtures("adk_ui")
async def test_the_reference_ui_answers_shows_refusals_graph_and_traces(
    browser: Browser,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    ui_port = free_port()
    api = [str(BATON), "api_server", str(EXAMPLES), "--port", "0", "--trace-to-ui"]
    api += ["--db", str(tmp_path / "ui.db"), "--allow-origin", f"http://127.0.0.1:{ui_port}"]
    with serving(api) as backend:
        ui = [sys.executable, str(ROOT / "scripts" / "adk_ui.py"), "--port", str(ui_port)]
        with serving([*ui, "--backend", backend]) as front:
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            await page.goto(f"{front}/?app=expense_approval")
            message = page.locator("textarea").first
            await message.fill("120.50 taxi to the airport")
            await message.press("Enter")

            # A refused answer is shown (the 422 arrives as an SSE error frame).
            await answer_form(page, adjusted_amount="-5")
            snack = page.locator("mat-snack-bar-container")
            await expect(snack).to_contain_text("InvalidResponseError")
            await expect(snack).to_contain_text("adjusted_amount: -5 is less than the minimum")
            await screenshot(page, "adk-ui-refusal")

            # The session reloads with the question still open; only the required field set.
            await page.reload()
            await answer_form(page, adjusted_amount=None)
            paid = "paid 120.50 for 'taxi to the airport' via payroll (other)"
            await expect(page.get_by_text(paid)).to_be_visible()

            # The graph, drawn by the UI from baton's DOT: the workflow's nodes and routes.
            graph = page.locator("svg").filter(has_text="revise")
            await expect(graph.first).to_be_visible()
            await expect(graph.first).to_contain_text("approved")
            await expect(graph.first).to_contain_text("END")
            await screenshot(page, "adk-ui-answered")

            await page.get_by_text("Traces", exact=True).click()
            await expect(page.get_by_text("baton.invocation").first).to_be_visible()
            await expect(page.get_by_text("baton.node").first).to_be_visible()
            await screenshot(page, "adk-ui-traces")
            sid = page.url.split("session=")[1].split("&")[0]
            await page.close()
        async with httpx.AsyncClient(base_url=backend) as client:
            session = (await client.get(f"/apps/expense_approval/users/user/sessions/{sid}")).json()
    outputs = [e.get("output") for e in session["events"] if "output" in e]
    assert outputs[-1] == paid
