"""Notifications survive the process that was sending them: real processes, SIGKILL.

An api_server sends to a receiver that accepts connections but never answers, so it
is in the middle of a delivery, holding its claim on that receiver, when it is
SIGKILLed. The receiver comes back on the same port; a `baton worker` on the same
database, pointed at it, delivers the question's notification once that claim lapses:
signed, nothing lost.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from baton.notifier import verify
from tests.operation.processes import (
    WITHIN,
    new_session,
    start_baton,
    start_run,
    waits_for_approval,
    write_app,
)
from tests.receiver import Receiver, held_port

SECRET = "takeover-secret"


@pytest.fixture
def black_hole() -> Iterator[socket.socket]:
    """A socket on a loopback port that accepts connections (the backlog) and never
    answers."""
    with held_port() as listening:
        listening.listen(16)
        yield listening


async def test_a_killed_servers_notifications_are_sent_by_another_process(
    tmp_path: Path, emptied_store_url: str, black_hole: socket.socket
) -> None:
    agents, log = write_app(tmp_path)
    port = black_hole.getsockname()[1]
    url = f"http://127.0.0.1:{port}/hook"
    # A 2 s receiver timeout: the dead server's claim lapses 7 s after it died.
    notify = ["--notify-url", url, "--notify-secret", SECRET, "--notify-timeout", "2"]
    notify += ["--db", emptied_store_url]
    server = await start_baton("api_server", str(agents), "--port", "0", *notify, log=log)
    receiver = Receiver()
    worker = None
    try:
        session = await new_session(server)
        running = await start_run(server, session, "go")
        await waits_for_approval(server, session)
        await running
        server.signal(signal.SIGKILL)
        await server.exit_code(WITHIN)
        back = held_port(port)  # the port, held while the black hole closes
        black_hole.close()
        await receiver.start(back)  # the receiver is back, at the URL the claim is on
        worker = await start_baton("worker", str(agents), *notify, log=log)
        # The dead server's claim lapses (its 2 s timeout + 5 s), then the worker sends.
        [opened] = await receiver.wait_for(1, within=WITHIN + 7)
    finally:
        if worker is not None:
            worker.signal(signal.SIGTERM)
            await worker.exit_code(WITHIN)
        if server.process.returncode is None:
            server.signal(signal.SIGKILL)
            await server.exit_code(WITHIN)
        await receiver.stop()
    assert opened.json["type"] == "question.opened"
    assert opened.json["sessionId"] == session
    assert opened.json["question"]["interruptId"] == "approve"
    assert verify(SECRET, httpx.Headers(opened.headers), opened.body)
