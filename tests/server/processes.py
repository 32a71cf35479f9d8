"""Servers run as their own processes, as a person starts them, on 127.0.0.1."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

BATON = Path(sys.executable).parent / "baton"
HTTP_TIMEOUT = 60.0
"""Seconds a test's HTTP client waits for a server (httpx's default is 5): a request is
answered in milliseconds, but a loaded machine has taken seconds over a new server's first
ones (imports, a database's first connection); only a server that is really stuck takes
a minute, and pytest's own timeout (120 s) is still further."""
KEEP_IDLE = httpx.Limits(keepalive_expiry=2.5)
"""A client of a server process lets an idle connection go at half the server's keep-alive
(5 s): with both at 5 s a request sent after about 5 s idle could meet the server's close
on its way and fail with httpx.ReadError."""
_URL = re.compile(r"http://127\.0\.0\.1:\d+/")


class PortTakenError(AssertionError):
    """The server could not listen: another process took its port first."""


@contextmanager
def serving(args: list[str], *, timeout: float = 30) -> Iterator[str]:
    """Start `args`, wait for the URL it prints first, yield it; stop it with SIGINT."""
    env = {**os.environ, "COLUMNS": "200"}
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # the server prints its URL once it listens
            found = _URL.search(line)
            if found is None:
                proc.kill()
                _, err = proc.communicate(timeout=timeout)
                taken = "Address already in use" in err
                raise (PortTakenError if taken else AssertionError)(
                    f"{args[0]} did not start: {line}{err}"
                )
            yield found.group(0).rstrip("/")
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()


def free_port() -> int:
    """A port nothing listens on now (for a server whose URL must be known in advance);
    another process may take it before the server does (`PortTakenError`)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
