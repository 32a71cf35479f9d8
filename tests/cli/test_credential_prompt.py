"""`baton run` asks a credential request in a person's words, as the web inbox does: an
API key or token typed without being shown (the terminal's echo off, as getpass), or an
OAuth2 sign-in's link and the address it sent the person to; the answer is one the
runner accepts, and the secret is never printed."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import termios
import threading
import time

from rich.console import Console

from baton import App, Context, Runner, Workflow, node
from baton.auth.auth_tool import AuthConfig
from baton.sessions.services import InMemorySessionService
from baton.terminal import Outcome, Terminal, drive, prompt_reader
from tests.agents.test_tool_credentials import TokenEndpoint, oauth2_config
from tests.workflow.test_node_credentials import CONFIG


async def drive_gated(terminal: Terminal, config: AuthConfig) -> tuple[Outcome, list[str]]:
    """Run a workflow whose node needs `config`'s credential, asking at `terminal`; the
    credentials the node got (API key, or access token)."""
    got: list[str] = []

    @node(auth_config=config)
    def fetch(ctx: Context) -> str:
        credential = ctx.get_auth_response(config)
        assert credential is not None
        token = credential.oauth2.access_token if credential.oauth2 else None
        got.append(credential.api_key or token or "")
        return "fetched"

    service = InMemorySessionService()
    workflow = Workflow(name="wf", edges=[("START", fetch)])
    runner = Runner(app=App(name="gated", root_agent=workflow), session_service=service)
    session = await service.create_session(app_name="gated", user_id="u")
    return await drive(runner, terminal, user_id="u", session_id=session.id), got


async def test_an_api_key_is_asked_in_words_read_unshown_and_never_printed() -> None:
    lines: list[str] = []
    secrets: list[str] = []

    def read_line(prompt: str) -> str | None:
        lines.append(prompt)
        return None

    def read_secret(prompt: str) -> str | None:
        secrets.append(prompt)
        return ["", "K-SECRET-9"][len(secrets) - 1] if len(secrets) <= 2 else None

    console = Console(width=200, record=True, color_system=None)
    terminal = Terminal(console, read_line, interactive=True, read_secret=read_secret)

    outcome, got = await drive_gated(terminal, CONFIG)

    assert outcome is Outcome.COMPLETED
    assert got == ["K-SECRET-9"]
    assert secrets == ["API key (not shown)>", "API key (not shown)>"]  # empty: asked again
    assert lines == []
    text = console.export_text()
    assert "Asks for: API key (sent in the header X-Key)" in text
    assert "type the API key first; nothing was sent." in text
    assert "K-SECRET-9" not in text


async def test_an_oauth2_sign_in_gives_its_link_and_takes_the_address_it_sent_to() -> None:
    with TokenEndpoint() as endpoint:
        console = Console(width=1000, record=True, color_system=None)
        prompts: list[str] = []

        def read_line(prompt: str) -> str | None:
            prompts.append(prompt)
            if len(prompts) > 1:
                return None
            shown = console.export_text(clear=False)
            [link] = re.findall(r"Sign in at login\.example: (\S+)", shown)
            [state] = re.findall(r"[?&]state=([^&\s]+)", link)
            return f"https://app.example/cb?code=abc&state={state}"

        terminal = Terminal(console, read_line, interactive=True, read_secret=lambda _: None)

        outcome, got = await drive_gated(terminal, oauth2_config(endpoint.url))

        assert outcome is Outcome.COMPLETED
        assert got == ["AT-1"]
        assert prompts == ["Address>"]
        text = console.export_text()
        assert "Asks for: sign in at login.example (oauth2)" in text
        assert "Then paste the address the sign-in sent you to." in text
        assert "code=abc" not in text


async def test_piped_input_answers_a_credential_request_with_the_key() -> None:
    typed = iter(["K-PIPED"])
    console = Console(file=io.StringIO(), width=200, record=True, color_system=None)
    terminal = Terminal(console, lambda _: next(typed, None), interactive=False)

    outcome, got = await drive_gated(terminal, CONFIG)

    assert (outcome, got) == (Outcome.COMPLETED, ["K-PIPED"])
    assert "K-PIPED" not in console.export_text()


def test_a_secret_is_read_with_the_terminal_s_echo_off_and_echo_is_restored() -> None:
    """On a real terminal (a pty): what is typed while the secret is read is not echoed
    back, the line is read whole, and the terminal echoes again afterwards."""
    main, side = pty.openpty()
    with open(side, encoding="utf-8", closefd=False) as stdin:
        read = prompt_reader(Console(file=io.StringIO(), color_system=None), stdin, secret=True)

        def type_once_echo_is_off() -> None:
            deadline = time.monotonic() + 30
            while termios.tcgetattr(side)[3] & termios.ECHO:  # a condition, bounded
                if time.monotonic() > deadline:
                    return
                time.sleep(0.001)
            os.write(main, b"s3cret\n")

        typist = threading.Thread(target=type_once_echo_is_off)
        typist.start()
        assert read("API key (not shown)>") == "s3cret"
        typist.join()

        assert termios.tcgetattr(side)[3] & termios.ECHO  # restored
        os.write(side, b"END")  # the side's output after any echo: read up to it
        shown = b""
        while not shown.endswith(b"END"):
            ready, _, _ = select.select([main], [], [], 30)
            assert ready, f"no output from the terminal; so far {shown!r}"
            shown += os.read(main, 1024)
        assert b"s3cret" not in shown
    os.close(main)
    os.close(side)
