"""A fork server for the MCP test server: one process imports the MCP SDK once, and each
stdio session's server is a fresh process forked from it, instead of a new interpreter
that spends about a second importing the SDK (most of an MCP test's time).

`python -S -I tests/tools/mcp_forks.py <socket> <mode>` is the command a session (or an
HTTP test) starts: it hands its stdin, stdout and stderr (and MCP_CALL_LOG) to the fork
server listening on `<socket>`, which forks a server process that serves on them in
that mode (`stdio`: MCP on stdin and stdout; `http`: see tests/tools/mcp_server.py).
The command lives as long as that process: it exits with its exit status, passes a
SIGTERM on to it, and its own end (even a SIGKILL) ends it. So a session still has a
server process of its own, started on open and gone when the session closes; only its
start is cheaper.

Only the standard library here: the command starts without `site` and imports nothing
else.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

_PASSED_ENV = ("MCP_CALL_LOG",)


@dataclass
class _Child:
    pid: int
    pidfd: int
    conn: socket.socket


class _ForkServer:
    def __init__(self, path: str, modes: dict[str, Callable[[], None]]) -> None:
        self.modes = modes
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(64)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.selector.register(sys.stdin, selectors.EVENT_READ)
        self.by_pidfd: dict[int, _Child] = {}
        self.by_conn: dict[socket.socket, _Child] = {}

    def run(self) -> None:
        print("ready", flush=True)
        while True:
            for key, _ in self.selector.select():
                if key.fileobj is self.listener:
                    self.fork(self.listener.accept()[0])
                elif key.fileobj is sys.stdin:  # the test session ended
                    for child in self.by_conn.values():
                        os.kill(child.pid, signal.SIGKILL)
                    return
                elif isinstance(key.fileobj, int):
                    self.reap(self.by_pidfd.pop(key.fileobj))
                else:  # the command went away (killed) while its child runs: end the child
                    conn = cast(socket.socket, key.fileobj)
                    child = self.by_conn.pop(conn, None)
                    if child is None:  # reaped earlier in this same batch
                        continue
                    self.selector.unregister(child.conn)
                    os.kill(child.pid, signal.SIGKILL)  # its pidfd then reaps it

    def fork(self, conn: socket.socket) -> None:
        message, fds, _, _ = socket.recv_fds(conn, 65536, 3)
        pid = os.fork()
        if pid == 0:  # the child: closes what is the fork server's, then serves
            self.selector.close()
            self.listener.close()
            for other in self.by_conn:
                other.close()
            for pidfd in self.by_pidfd:
                os.close(pidfd)
            conn.close()
            request = json.loads(message)
            _serve_on(fds, request["env"], self.modes[request["mode"]])
        for fd in fds:
            os.close(fd)
        child = _Child(pid, os.pidfd_open(pid), conn)
        self.by_pidfd[child.pidfd] = self.by_conn[conn] = child
        self.selector.register(child.pidfd, selectors.EVENT_READ)
        self.selector.register(conn, selectors.EVENT_READ)
        with contextlib.suppress(OSError):  # a command killed meanwhile: its conn is read next
            conn.sendall(f"{pid}\n".encode())

    def reap(self, child: _Child) -> None:
        """A child exited: reap it, then tell its command (which then exits too)."""
        self.selector.unregister(child.pidfd)
        os.close(child.pidfd)
        _, status = os.waitpid(child.pid, 0)
        if self.by_conn.pop(child.conn, None) is not None:  # its command still waits
            self.selector.unregister(child.conn)
            with contextlib.suppress(OSError):  # the command may end at the same moment
                child.conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        child.conn.close()


def serve_forks(path: str, modes: dict[str, Callable[[], None]]) -> None:
    """The fork server: accept commands on the Unix socket `path` and run the function of
    each's mode in a child process, on the command's stdin, stdout and stderr. Prints
    `ready` once it listens; ends (with its children) when its own stdin closes."""
    _ForkServer(path, modes).run()


def _serve_on(fds: list[int], env: dict[str, str], serve: Callable[[], None]) -> None:
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.update(env)
    code = 0
    try:
        serve()
    except BaseException:  # the child ends here, whatever happened
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _launch(path: str, mode: str) -> None:
    """The command: its child's exit is its own."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    env = {name: os.environ[name] for name in _PASSED_ENV if name in os.environ}
    socket.send_fds(conn, [json.dumps({"mode": mode, "env": env}).encode()], [0, 1, 2])
    # Only the child holds the session's pipes now: its end is their end.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    answers = conn.makefile("r")
    pid = int(answers.readline())

    def forward(signum: int, frame: object) -> None:
        os.kill(pid, signum)

    signal.signal(signal.SIGTERM, forward)
    code = int(answers.readline() or "-9")
    if code < 0:
        if -code not in (signal.SIGKILL, signal.SIGSTOP):  # their handlers cannot be set
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    _launch(sys.argv[1], sys.argv[2])
