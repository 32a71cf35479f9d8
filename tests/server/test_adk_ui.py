"""The reference's own web UI, served from google-adk's package files, works against baton.

google-adk lives in its own venv (`.venv-adk`, made by `make adk-ui-venv`, i.e.
scripts/adk_venv.sh); baton never imports it. Its UI is served as the README says
(scripts/adk_ui.py, pointed at a `baton api_server --trace-to-ui` process) and driven in
Debian's Chromium as a person would: a run of the expense example is answered from the
Form tab with only the required field set, a refused answer is shown, the graph is
drawn, the Traces tab lists baton's spans, and an exported session imported from the
UI shows its history and says why its open question cannot be answered there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.server.conftest import EXAMPLES
from tests.server.processes import BATON, HTTP_TIMEOUT, PortTakenError, free_port, serving
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
    with ExitStack() as stack:
        backend, front = _backend_and_ui(stack, tmp_path)
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
        async with httpx.AsyncClient(base_url=backend, timeout=HTTP_TIMEOUT) as client:
            session = (await client.get(f"{SESSIONS}/{sid}")).json()
            outputs = [e.get("output") for e in session["events"] if "output" in e]
            assert outputs[-1] == paid
            exported = await paused_export(client, tmp_path)
        await import_and_see_what_cannot_go_on(page, exported)
        await page.close()


SESSIONS = "/apps/expense_approval/users/user/sessions"


def _backend_and_ui(stack: ExitStack, folder: Path) -> tuple[str, str]:
    """Start baton's api_server and the reference UI it allows; their URLs.

    baton must know the UI's origin when it starts, so the UI's port is chosen before
    the UI listens on it; when another process took it meanwhile, both start again on
    another port.
    """
    for _ in range(3):
        ui_port = free_port()
        api = [str(BATON), "api_server", str(EXAMPLES), "--port", "0", "--trace-to-ui"]
        api += ["--db", str(folder / f"ui{ui_port}.db")]
        api += ["--allow-origin", f"http://127.0.0.1:{ui_port}"]
        ui = [sys.executable, str(ROOT / "scripts" / "adk_ui.py"), "--port", str(ui_port)]
        with ExitStack() as attempt:
            backend = attempt.enter_context(serving(api))
            try:
                front = attempt.enter_context(serving([*ui, "--backend", backend]))
            except PortTakenError:
                continue  # leaving the attempt stops its backend
            stack.enter_context(attempt.pop_all())
            return backend, front
    raise AssertionError("the reference UI found its port taken three times")


async def paused_export(client: httpx.AsyncClient, folder: Path) -> Path:
    """A session waiting for its review, written as an export file."""
    sid = (await client.post(SESSIONS, json={})).json()["id"]
    body = {"appName": "expense_approval", "userId": "user", "sessionId": sid}
    message = {"role": "user", "parts": [{"text": "9 pens"}]}
    await client.post("/run", json={**body, "newMessage": message})
    exported = folder / "exported.json"
    exported.write_text((await client.get(f"{SESSIONS}/{sid}")).text)
    return exported


async def import_and_see_what_cannot_go_on(page: Page, exported: Path) -> None:
    """The UI's Import: history shown, the note says the question cannot be answered here."""
    await page.get_by_text("Events", exact=True).click()
    # The session picker (its icon's ligature is `chat`) opens the drawer with Import.
    picker = page.get_by_role("button").filter(has_text="chat").filter(has_text="arrow_drop_down")
    await picker.click()
    async with page.expect_file_chooser() as chosen:
        await page.get_by_role("button", name="Import").click()
    await (await chosen.value).set_files(str(exported))
    await expect(page.get_by_text("Session imported successfully").first).to_be_visible()
    await expect(page.get_by_text("Approve 9.00 for 'pens'?").first).to_be_visible()
    note = page.get_by_text("were not imported, so those questions cannot be answered here")
    await expect(note).to_be_visible()
    await answer_form(page, adjusted_amount=None)
    refused = page.locator("mat-snack-bar-container").filter(has_text="UnknownInterruptError")
    await expect(refused).to_contain_text("the run that asked it was not imported")
    await screenshot(page, "adk-ui-imported")
