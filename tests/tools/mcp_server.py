"""A small MCP server for the MCP toolset tests, written with the MCP SDK.

`python tests/tools/mcp_server.py stdio` serves on stdin/stdout; `... http` serves
streamable HTTP on 127.0.0.1 at a free port, which it prints as its first line
(`port <n>`); `... forks <socket>` is a fork server (tests/tools/mcp_forks.py) whose
children serve either way, each for one session or test. Each tool call appends a line
to the file named by MCP_CALL_LOG (`<tool> <arguments as JSON>`), and the process
appends `start <pid>` when it starts, so tests count calls and processes from outside.
`charge` logs the idempotency key baton sends in the request's `_meta` too, and reports
progress once it is logged (a test's client kills itself there: the call was sent, its
result not yet back).
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import anyio
import uvicorn
from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("baton-test")
TABLE = {"alpha": "the first letter", "omega": "the last letter"}


def _log(line: str) -> None:
    path = os.environ.get("MCP_CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(line + "\n")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    _log(f"add {json.dumps({'a': a, 'b': b})}")
    return a + b


@server.tool()
def lookup(key: str) -> str:
    """Look a key up in the table."""
    _log(f"lookup {json.dumps({'key': key})}")
    if key not in TABLE:
        raise ToolError(f"no entry for {key!r}")
    return TABLE[key]


@server.tool(meta={"ui": {"resourceUri": "ui://cart/view"}})
def cart(item: str) -> str:
    """Put an item in the cart (an MCP App: the cart's view is ui://cart/view)."""
    _log(f"cart {json.dumps({'item': item})}")
    return f"{item} is in the cart"


@server.tool()
def whoami(ctx: Context) -> str:
    """The caller's x-user header (HTTP only)."""
    request = ctx.request_context.request
    user = request.headers.get("x-user", "") if request is not None else ""
    _log(f"whoami {json.dumps({'user': user})}")
    return user


@server.tool()
async def count(to: int, ctx: Context) -> int:
    """Count up, reporting each step as progress."""
    _log(f"count {json.dumps({'to': to})}")
    for step in range(1, to + 1):
        await ctx.report_progress(step, to, f"step {step}")
    return to


@server.tool()
async def charge(amount: int, ctx: Context) -> str:
    """Charge an amount (once per idempotency key, if the server deduplicated)."""
    meta = ctx.request_context.meta or {}
    key = meta.get("baton/idempotency-key")
    _log(f"charge {json.dumps({'amount': amount, 'key': key})}")
    await ctx.report_progress(1, 1, "charging")
    return f"charged {amount}"


@server.tool()
def credentials(ctx: Context) -> str:
    """The caller's Authorization and X-API-Key headers, as JSON (HTTP only)."""
    request = ctx.request_context.request
    names = ("authorization", "x-api-key")
    if request is None:
        return json.dumps(dict.fromkeys(names))
    return json.dumps({name: request.headers.get(name) for name in names})


@server.tool()
def session_id(ctx: Context) -> str:
    """The MCP session this call came on (streamable HTTP's session id header)."""
    request = ctx.request_context.request
    return request.headers.get("mcp-session-id", "") if request is not None else ""


@server.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Have the client's model summarize a text (sampling)."""
    asked = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))
    answer = await ctx.session.create_message([asked], max_tokens=50)  # pyright: ignore[reportDeprecated] -- 2.x still serves it
    content = answer.content
    return content.text if isinstance(content, types.TextContent) else "?"


class Approval(BaseModel):
    ok: bool


@server.tool()
async def approve(item: str, ctx: Context) -> str:
    """Ask the client's user to approve an item (elicitation)."""
    answer = await ctx.elicit(f"Approve {item}?", Approval)
    return f"{answer.action} {answer.data.ok}" if answer.action == "accept" else answer.action


@server.resource("res://greeting", name="greeting", mime_type="text/plain")
def greeting() -> str:
    """A resource: a greeting."""
    return "hello"


@server.resource("res://pixel", name="pixel", mime_type="image/png")
def pixel() -> bytes:
    """A binary resource."""
    return b"\x89PNG-1px"


async def _serve_http() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"port {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    await uvicorn.Server(config).serve(sockets=[sock])


def _serve_stdio() -> None:
    _log(f"start {os.getpid()}")
    server.run()


def _serve_http_here() -> None:
    _log(f"start {os.getpid()}")
    anyio.run(_serve_http)


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        _serve_http_here()
    elif sys.argv[1] == "forks":
        sys.path.insert(0, str(Path(__file__).parents[2]))  # the repository, for `tests`
        from tests.tools.mcp_forks import serve_forks

        serve_forks(sys.argv[2], {"stdio": _serve_stdio, "http": _serve_http_here})
    else:
        _serve_stdio()
