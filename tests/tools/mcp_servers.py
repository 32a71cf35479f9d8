"""The MCP test server (`mcp_server.py`) as tests reach it: a stdio command, or a
streamable HTTP process on 127.0.0.1, and its log of calls and processes."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pydantic import JsonValue

from baton.tools.mcp_tool import StdioConnectionParams, StdioServerParameters

SERVER = Path(__file__).with_name("mcp_server.py")
FORKS = Path(__file__).with_name("mcp_forks.py")


@dataclass(frozen=True)
class CallLog:
    """The file the server appends its starts and tool calls to."""

    path: Path

    def lines(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path.exists() else []

    def calls(self) -> list[str]:
        """The tool calls, as `<tool> <arguments JSON>`."""
        return [line for line in self.lines() if not line.startswith("start ")]

    def pids(self) -> list[int]:
        """The server processes started, in order."""
        return [int(line.split()[1]) for line in self.lines() if line.startswith("start ")]


def stdio(log: CallLog, *, timeout: float = 20.0) -> StdioConnectionParams:
    """The test server as a stdio command (a process per session, forked from the fork
    server of this test session: see tests/tools/mcp_forks.py)."""
    command = StdioServerParameters(
        command=sys.executable,
        args=_forked("stdio"),
        env={"MCP_CALL_LOG": str(log.path)},
    )
    return StdioConnectionParams(server_params=command, timeout=timeout)


def _forked(mode: str) -> list[str]:
    """The arguments of the command that runs the test server in `mode` in a process
    forked from the fork server (see tests/tools/mcp_forks.py)."""
    return ["-S", "-I", str(FORKS), _fork_server(), mode]


@functools.cache
def _fork_server() -> str:
    """The socket of the test server's fork server, started on first use and ended when
    the test session ends (its stdin closes)."""
    directory = tempfile.mkdtemp(prefix="baton-mcp-")
    socket = os.path.join(directory, "forks")
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "forks", socket],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None
    assert stdout is not None
    assert stdout.readline() == "ready\n"

    def stop() -> None:
        stdin.close()
        process.wait(timeout=20)
        stdout.close()
        shutil.rmtree(directory, ignore_errors=True)

    atexit.register(stop)
    return socket


def result(value: JsonValue) -> dict[str, JsonValue]:
    """The CallToolResult (as the model gets it) of a tool that returned `value`."""
    return {
        "content": [{"type": "text", "text": str(value)}],
        "structuredContent": {"result": value},
        "isError": False,
    }


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@contextmanager
def serve_http(log: CallLog) -> Iterator[str]:
    """The test server over streamable HTTP for the block: its MCP endpoint's URL."""
    env = {**os.environ, "MCP_CALL_LOG": str(log.path)}
    process = subprocess.Popen(
        [sys.executable, *_forked("http")], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert process.stdout is not None
        port = process.stdout.readline().split()[1]  # "port <n>"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=20)
        if process.stdout is not None:
            process.stdout.close()
