"""McpToolset against a real MCP server (tests/tools/mcp_server.py, written with the MCP
SDK): over stdio, a subprocess per session, and over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import http.server
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, cast

import httpx
import pytest
from fastapi.openapi.models import (
    APIKey,
    APIKeyIn,
    HTTPBase,
    HTTPBearer,
    OAuth2,
    OAuthFlowAuthorizationCode,
    OAuthFlowClientCredentials,
    OAuthFlows,
    OpenIdConnect,
)
from pydantic import JsonValue, ValidationError

import baton.tools
from baton.auth import (
    AuthCredential,
    AuthCredentialTypes,
    HttpAuth,
    HttpCredentials,
    OAuth2Auth,
    ServiceAccount,
)
from baton.tools import ToolContext
from baton.tools.mcp_tool import (
    MCPSessionManager,
    McpTool,
    MCPToolset,
    McpToolset,
    StdioConnectionParams,
    StdioServerParameters,
    StreamableHTTPConnectionParams,
)
from baton.tools.mcp_tool.mcp_toolset import _Listings  # pyright: ignore[reportPrivateUsage]
from baton.tools.mcp_tool.sdk import create_mcp_http_client, dump, field, mcp_types
from baton.types import FunctionDeclaration
from baton.ui_widget import UiWidget
from tests.tools.mcp_servers import (
    CallLog,
    is_running,
    result,
    serve_http,
    stdio,
)


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server over streamable HTTP for the module's tests (each start imports the SDK,
    seconds): for tests that do not count its calls."""
    with serve_http(CallLog(tmp_path_factory.mktemp("mcp") / "calls.log")) as url:
        yield url


def tool_named(tools: list[McpTool], name: str) -> McpTool:
    return next(t for t in tools if t.name == name)


async def mcp_tools(toolset: McpToolset) -> list[McpTool]:
    tools = await toolset.get_tools()
    assert all(isinstance(t, McpTool) for t in tools)
    return [t for t in tools if isinstance(t, McpTool)]


ALL_TOOLS = [
    "add",
    "approve",
    "cart",
    "charge",
    "count",
    "credentials",
    "lookup",
    "session_id",
    "summarize",
    "whoami",
]
"""The test server's tools, by name."""

ADD = FunctionDeclaration(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "title": "addArguments",
        "properties": {
            "a": {"title": "A", "type": "integer"},
            "b": {"title": "B", "type": "integer"},
        },
        "required": ["a", "b"],
    },
)


async def test_the_servers_tools_are_declared_as_the_server_describes_them(log: CallLog) -> None:
    toolset = McpToolset(connection_params=stdio(log))
    tools = await mcp_tools(toolset)

    assert [t.name for t in tools] == ALL_TOOLS
    assert tool_named(tools, "add").declaration() == ADD
    assert tool_named(tools, "add").raw_mcp_tool.name == "add"
    await toolset.close()


async def test_a_call_returns_the_servers_result_and_a_tool_error_is_the_models_to_read(
    log: CallLog,
) -> None:
    toolset = McpToolset(connection_params=stdio(log))
    tools = await mcp_tools(toolset)

    added = await tool_named(tools, "add").run({"a": 2, "b": 3}, ToolContext())
    missing = await tool_named(tools, "lookup").run({"key": "zeta"}, ToolContext())

    assert added == result(5)
    assert missing == {
        "content": [{"type": "text", "text": "Error executing tool lookup: no entry for 'zeta'"}],
        "isError": True,
    }
    assert log.calls() == ['add {"a": 2, "b": 3}', 'lookup {"key": "zeta"}']
    await toolset.close()


async def test_an_mcp_app_tools_call_shows_its_view_as_a_widget(log: CallLog) -> None:
    """A tool whose listing names a `ui://` view (`meta.ui.resourceUri`, the MCP Apps
    extension) renders it beside its response, as the reference's McpTool does: the
    call's id, provider "mcp", the view, the tool as listed and the call's arguments."""
    toolset = McpToolset(connection_params=stdio(log))
    tools = await mcp_tools(toolset)
    cart = tool_named(tools, "cart")
    context = ToolContext(function_call_id="c1")

    assert await cart.run({"item": "hat"}, context) == result("hat is in the cart")

    assert cart.mcp_app_resource_uri == "ui://cart/view"
    listed = dump(cart.raw_mcp_tool)
    assert listed["meta"] == {"ui": {"resourceUri": "ui://cart/view"}}
    payload: dict[str, JsonValue] = {
        "resource_uri": "ui://cart/view",
        "tool": listed,
        "tool_args": {"item": "hat"},
    }
    assert context.actions.render_ui_widgets == [UiWidget(id="c1", provider="mcp", payload=payload)]
    plain = ToolContext(function_call_id="c2")
    assert await tool_named(tools, "add").run({"a": 1, "b": 2}, plain) == result(3)
    assert tool_named(tools, "add").mcp_app_resource_uri is None
    assert plain.actions.render_ui_widgets is None
    await toolset.close()


async def test_one_server_process_serves_every_call_and_close_ends_it(log: CallLog) -> None:
    toolset = McpToolset(connection_params=stdio(log))
    add = tool_named(await mcp_tools(toolset), "add")
    await add.run({"a": 1, "b": 1}, ToolContext())
    await add.run({"a": 1, "b": 2}, ToolContext())
    [pid] = log.pids()
    assert is_running(pid)

    await toolset.close()
    await toolset.close()  # again: nothing left to close

    assert not is_running(pid)
    # Used after closing, it starts the server again.
    assert await add.run({"a": 2, "b": 2}, ToolContext()) == result(4)
    assert len(log.pids()) == 2
    await toolset.close()
    assert not any(is_running(p) for p in log.pids())


# The SDK's stdio transport (mcp 2.3.0) sometimes leaves a pipe socket of the killed
# server for the garbage collector, which reports it as a ResourceWarning.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_a_server_that_died_is_started_again_for_the_next_call(log: CallLog) -> None:
    toolset = McpToolset(connection_params=stdio(log))
    add = tool_named(await mcp_tools(toolset), "add")
    [first] = log.pids()
    os.kill(first, signal.SIGKILL)
    await _until_closed(toolset, first)

    added = await add.run({"a": 4, "b": 5}, ToolContext())

    assert added == result(9)
    assert len(log.pids()) == 2
    await toolset.close()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # as above
async def test_a_cached_listing_is_reused_without_asking_the_server(log: CallLog) -> None:
    cached = McpToolset(connection_params=stdio(log), tool_list_cache_ttl_seconds=600)
    first = [t.name for t in await cached.get_tools()]
    [pid] = log.pids()
    os.kill(pid, signal.SIGKILL)
    await _until_closed(cached, pid)

    again = [t.name for t in await cached.get_tools()]

    assert again == first == ALL_TOOLS
    assert log.pids() == [pid]  # not asked again: no server was started
    await cached.close()  # forgets the listing: the next one asks a new server
    assert [t.name for t in await cached.get_tools()] == first
    assert len(log.pids()) == 2
    await cached.close()
    with pytest.raises(ValueError, match="tool_list_cache_ttl_seconds must be positive"):
        McpToolset(connection_params=stdio(log), tool_list_cache_ttl_seconds=0)


async def test_tool_filter_and_prefix_choose_and_name_the_tools(log: CallLog) -> None:
    by_name = McpToolset(connection_params=stdio(log), tool_filter=["lookup", "add"])
    by_rule = McpToolset(
        connection_params=stdio(log),
        tool_filter=lambda tool, readonly_context=None: tool.name.startswith("who"),
        tool_name_prefix="srv",
    )

    assert [t.name for t in await by_name.get_tools()] == ["add", "lookup"]
    [whoami] = await by_rule.get_tools_with_prefix()
    assert whoami.name == "srv_whoami"
    assert whoami.declaration() == FunctionDeclaration(
        name="srv_whoami",
        description="The caller's x-user header (HTTP only).",
        parameters={"type": "object", "title": "whoamiArguments", "properties": {}},
    )
    # The server is called by its own name.
    assert await whoami.run({}, ToolContext()) == result("")
    await by_name.close()
    await by_rule.close()


async def test_a_server_that_cannot_start_is_a_connection_error_naming_it(tmp_path: Path) -> None:
    command = StdioServerParameters(command=sys.executable, args=[str(tmp_path / "absent.py")])
    toolset = McpToolset(connection_params=StdioConnectionParams(server_params=command))

    with pytest.raises(ConnectionError, match=r"Failed to get tools from MCP server: .*absent\.py"):
        await toolset.get_tools()
    await toolset.close()


async def test_a_server_that_does_not_answer_in_time_is_a_connection_error() -> None:
    # It never answers, and ends when its stdin closes (closing the toolset): no kill
    # after the SDK's grace period.
    mute = ["-c", "import sys; sys.stdin.read()"]
    silent = StdioServerParameters(command=sys.executable, args=mute)
    toolset = McpToolset(connection_params=StdioConnectionParams(server_params=silent, timeout=0.5))

    with pytest.raises(ConnectionError, match=r"no session within 0\.5 seconds"):
        await toolset.get_tools()
    await toolset.close()


def test_bad_connection_params_are_refused() -> None:
    with pytest.raises(ValueError, match="Missing connection params"):
        McpToolset(connection_params=None)  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="connection_params must be StdioConnectionParams"):
        McpToolset(connection_params={"command": "npx"})  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="require_confirmation of McpToolset must be a bool"):
        McpToolset(connection_params=stdio(CallLog(Path("unused"))), require_confirmation="yes")  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValidationError, match="timeout"):
        StdioConnectionParams(server_params=StdioServerParameters(command="x"), timeout=0)
    with pytest.raises(ValidationError, match="sse_read_timout"):
        StreamableHTTPConnectionParams(url="http://x", sse_read_timout=3)  # pyright: ignore[reportCallIssue]


async def test_streamable_http_lists_and_calls_tools(http_url: str) -> None:
    toolset = McpToolset(
        connection_params=StreamableHTTPConnectionParams(url=http_url, headers={"x-user": "ann"})
    )
    tools = await mcp_tools(toolset)

    added = await tool_named(tools, "add").run({"a": 20, "b": 22}, ToolContext())
    who = await tool_named(tools, "whoami").run({}, ToolContext())

    assert [t.name for t in tools] == ALL_TOOLS
    assert added == result(42)
    assert who == result("ann")
    await toolset.close()


async def test_a_call_to_a_server_that_went_away_answers_the_model_with_an_error(
    log: CallLog,
) -> None:
    with serve_http(log) as url:
        toolset = McpToolset(connection_params=StreamableHTTPConnectionParams(url=url, timeout=2))
        add = tool_named(await mcp_tools(toolset), "add")

    failed = await add.run({"a": 1, "b": 2}, ToolContext())

    # Which error depends on when the client notices: the call's request fails (the
    # server's error answer), or the session is found dead and reopening it fails.
    assert isinstance(failed, dict)
    assert list(failed) == ["error"]
    assert str(failed["error"]).startswith(
        ("MCP tool execution failed: ", "Unexpected error during MCP tool execution: ")
    )
    refused = r"Failed to get tools from MCP server: .*127\.0\.0\.1"
    with pytest.raises(ConnectionError, match=refused):
        await toolset.get_tools()
    await toolset.close()


def test_baton_imports_without_the_mcp_sdk_and_the_toolset_says_how_to_install_it() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["mcp"] = None  # as if not installed
        import baton, baton.tools
        try:
            from baton.tools.mcp_tool import McpToolset
        except ImportError as error:
            print(error)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert "pip install 'baton[mcp]'" in done.stdout


def test_the_toolset_is_also_read_from_baton_tools() -> None:
    assert baton.tools.McpToolset is McpToolset


def test_the_toolset_read_from_baton_tools_is_typed_for_type_checkers(tmp_path: Path) -> None:
    """Read on first use (a module `__getattr__`, which checkers see as Any), yet typed:
    pyright sees the class."""
    user = tmp_path / "user.py"
    user.write_text(
        "from baton.tools import McpToolset, MCPToolset\nreveal_type((McpToolset, MCPToolset))\n"
    )
    pyright = Path(sys.executable).parent / "pyright"
    done = subprocess.run(
        [str(pyright), str(user)], capture_output=True, text=True, timeout=300, check=False
    )
    assert 'is "tuple[type[McpToolset], type[McpToolset]]"' in done.stdout, done.stdout


async def test_the_older_name_mcptoolset_warns_and_works(log: CallLog) -> None:
    with pytest.warns(DeprecationWarning, match="MCPToolset is the older name of McpToolset"):
        toolset = MCPToolset(connection_params=stdio(log), tool_filter=["add"])

    assert isinstance(toolset, McpToolset)
    assert [t.name for t in await toolset.get_tools()] == ["add"]
    await toolset.close()


async def _until_closed(toolset: McpToolset, pid: int) -> None:
    """Wait until the killed server has exited and its session has seen its pipes close."""
    stat = Path(f"/proc/{pid}/stat")
    manager = toolset._mcp_session_manager  # pyright: ignore[reportPrivateUsage]
    sessions = manager._sessions  # pyright: ignore[reportPrivateUsage]
    while _running(stat) or any(s.alive for s in sessions.values()):  # noqa: ASYNC110
        await asyncio.sleep(0.01)  # nothing to wait on: the process is not ours


def _running(stat: Path) -> bool:
    """Whether the process of a /proc/<pid>/stat file is there and not a zombie (it may
    be reaped between any two reads)."""
    try:
        return stat.read_text().split()[2] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_listings_expire_after_their_ttl_and_are_capped() -> None:
    now = [0.0]
    listings = _Listings(10, clock=lambda: now[0])
    tool = mcp_types.Tool(name="add", input_schema={"type": "object"})
    listings.put("ann", [tool])

    now[0] = 9.9
    assert listings.get("ann") == [tool]
    now[0] = 10.0
    assert listings.get("ann") is None
    for user in range(70):
        listings.put(str(user), [tool])
    assert listings.get("0") is None  # the oldest went first
    assert listings.get("69") == [tool]
    assert _Listings(None).get("ann") is None


async def test_progress_the_server_reports_reaches_the_callback(log: CallLog) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def note(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    toolset = McpToolset(connection_params=stdio(log), progress_callback=note)
    [count] = [t for t in await toolset.get_tools() if t.name == "count"]

    assert await count.run({"to": 2}, ToolContext()) == result(2)
    assert seen == [(1, 2, "step 1"), (2, 2, "step 2")]
    await toolset.close()


async def test_a_progress_factory_makes_each_calls_callback_with_its_context(log: CallLog) -> None:
    def per_call(tool_name: str, *, callback_context: ToolContext, **kwargs: object):
        async def note(progress: float, total: float | None, message: str | None) -> None:
            callback_context.state[f"{tool_name} progress"] = progress

        return note

    toolset = McpToolset(connection_params=stdio(log), progress_callback=per_call)
    [count] = [t for t in await toolset.get_tools() if t.name == "count"]
    context = ToolContext()

    await count.run({"to": 3}, context)

    assert context.actions.state_delta == {"count progress": 3}
    await toolset.close()


async def test_an_idle_http_session_closes_itself_and_the_next_call_opens_another(
    http_url: str,
) -> None:
    params = StreamableHTTPConnectionParams(url=http_url)

    async def session_id(manager: MCPSessionManager) -> str:
        called = await manager.run(lambda session: session.call_tool("session_id", {}))
        return str(field(called, "structuredContent")["result"])

    # In use: kept. (With a timeout no stall of a loaded host outlasts: with 0.3 s the
    # second call could come after the session had rightly closed itself.)
    kept = MCPSessionManager(params, idle_timeout=60)
    assert await session_id(kept) == await session_id(kept)
    await kept.close()

    manager = MCPSessionManager(params, idle_timeout=0.3)
    first = await session_id(manager)
    await _until_idle_closed(manager)

    # The server has ended it too (the client ended it as it closed).
    assert await _answer_status(http_url, first) == 404
    second = await session_id(manager)
    assert second != first
    await manager.close()
    with pytest.raises(ValueError, match="idle_timeout must be positive"):
        MCPSessionManager(StreamableHTTPConnectionParams(url=http_url), idle_timeout=0)


async def test_a_session_slower_to_open_than_its_idle_timeout_still_takes_the_call(
    http_url: str,
) -> None:
    # Each request reaches the server late, as from a slow or busy one: the session takes
    # longer to open than its idle timeout, which counts from when it is ready, not from
    # when it began opening (it closed itself before the call that opened it could use it).
    idle = 0.3

    def slow_client(**kwargs: Any) -> Any:
        client = create_mcp_http_client(**kwargs)

        async def late(request: object) -> None:
            await asyncio.sleep(idle)  # the slowness under test, not a wait for anything

        client.event_hooks = {"request": [late], "response": []}
        return client

    params = StreamableHTTPConnectionParams(url=http_url, httpx_client_factory=slow_client)
    manager = MCPSessionManager(params, idle_timeout=idle)

    called = await manager.run(lambda session: session.call_tool("session_id", {}))

    assert str(field(called, "structuredContent")["result"])
    await manager.close()


async def _until_idle_closed(manager: MCPSessionManager) -> None:
    """Wait until every session's owner task has ended: it has left the transport, whose
    DELETE the server answered after ending the session. (A session stops being usable
    earlier, as soon as it decides to close: a request then can still find it open.)"""
    sessions = manager._sessions  # pyright: ignore[reportPrivateUsage]
    async with asyncio.timeout(10):
        while not all(s.ended for s in sessions.values()):  # noqa: ASYNC110
            await asyncio.sleep(0.05)  # it closes on its own timer: nothing to wait on


async def _answer_status(url: str, session_id: str) -> int:
    """The status a request on this MCP session id gets from the server. A request that
    arrives while the server is still ending the session can have its connection cut
    instead (seen under load): it is sent again."""
    headers = {"mcp-session-id": session_id, "accept": "application/json, text/event-stream"}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    async with httpx.AsyncClient() as client, asyncio.timeout(10):
        while True:
            try:
                return (await client.post(url, json=request, headers=headers)).status_code
            except httpx.RemoteProtocolError:
                await asyncio.sleep(0.05)


async def test_the_servers_sampling_and_elicitation_requests_reach_the_callbacks(
    http_url: str,
) -> None:
    asked: list[str] = []

    async def sample(
        context: object, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult:
        [message] = params.messages
        assert isinstance(message.content, mcp_types.TextContent)
        asked.append(message.content.text)
        text = mcp_types.TextContent(type="text", text="short")
        return mcp_types.CreateMessageResult(role="assistant", content=text, model="local")

    async def elicit(
        context: object, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"ok": True})

    toolset = McpToolset(
        connection_params=StreamableHTTPConnectionParams(url=http_url),
        tool_filter=["summarize", "approve"],
        sampling_callback=sample,
        elicitation_callback=elicit,
    )
    approve, summarize = await mcp_tools(toolset)

    assert await summarize.run({"text": "a long text"}, ToolContext()) == result("short")
    assert await approve.run({"item": "the plan"}, ToolContext()) == result("accept True")
    assert asked == ["a long text", "Approve the plan?"]
    await toolset.close()


async def test_without_a_sampling_callback_the_server_is_told_sampling_is_not_offered(
    http_url: str,
) -> None:
    toolset = McpToolset(
        connection_params=StreamableHTTPConnectionParams(url=http_url),
        tool_filter=["summarize"],
    )
    [summarize] = await mcp_tools(toolset)

    answer = await summarize.run({"text": "a long text"}, ToolContext())

    # The server's request fails, and so does its tool call: the model reads why.
    assert answer == {"error": "MCP tool execution failed: Sampling not supported"}
    await toolset.close()


def test_from_config_is_refused_naming_what_baton_lacks() -> None:
    with pytest.raises(NotImplementedError, match="agent config file .* baton does not read"):
        McpToolset.from_config({"stdio_server_params": {"command": "x"}}, "/agents/root.yaml")


def bearer(token: str | None = "t-1") -> AuthCredential:
    secret = HttpCredentials(token=token)
    http = HttpAuth(scheme="bearer", credentials=secret)
    return AuthCredential(auth_type=AuthCredentialTypes.HTTP, http=http)


async def sent_credentials(toolset: McpToolset) -> object:
    """What the server's `credentials` tool saw (its listing came through too)."""
    [tool] = [t for t in await mcp_tools(toolset) if t.name == "credentials"]
    answer = await tool.run({}, ToolContext())
    await toolset.close()
    assert isinstance(answer, dict)
    structured = cast(dict[str, str], answer["structuredContent"])
    return json.loads(structured["result"])


async def test_an_api_key_or_http_credential_is_sent_as_the_reference_sends_it(
    http_url: str,
) -> None:
    def toolset(scheme: object, credential: AuthCredential) -> McpToolset:
        params = StreamableHTTPConnectionParams(url=http_url)
        return McpToolset(connection_params=params, auth_scheme=scheme, auth_credential=credential)

    api_key = AuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key="k-1")
    in_header = APIKey(**{"in": APIKeyIn.header}, name="X-API-Key")  # pyright: ignore[reportArgumentType]
    basic = AuthCredential(
        auth_type=AuthCredentialTypes.HTTP,
        http=HttpAuth(scheme="basic", credentials=HttpCredentials(username="ann", password="pw")),
    )

    assert await sent_credentials(toolset(in_header, api_key)) == {
        "authorization": None,
        "x-api-key": "k-1",
    }
    assert await sent_credentials(toolset(HTTPBase(scheme="basic"), basic)) == {
        "authorization": "Basic YW5uOnB3",  # base64 of ann:pw
        "x-api-key": None,
    }
    # Over the connection's (or a header_provider's) header of that name, in any case.
    params = StreamableHTTPConnectionParams(url=http_url, headers={"authorization": "Bearer 0"})
    over = McpToolset(connection_params=params, auth_scheme=HTTPBearer(), auth_credential=bearer())
    assert await sent_credentials(over) == {"authorization": "Bearer t-1", "x-api-key": None}


def test_credentials_baton_cannot_use_by_itself_are_refused_naming_what_is_missing() -> None:
    params = StreamableHTTPConnectionParams(url="http://127.0.0.1:1/mcp")

    def build(scheme: object, credential: AuthCredential | None) -> McpToolset:
        return McpToolset(connection_params=params, auth_scheme=scheme, auth_credential=credential)

    oauth2 = AuthCredential(
        auth_type=AuthCredentialTypes.OAUTH2, oauth2=OAuth2Auth(client_id="c", client_secret="s")
    )
    robot = AuthCredential(
        auth_type=AuthCredentialTypes.SERVICE_ACCOUNT,
        service_account=ServiceAccount(use_default_credential=True),
    )
    in_query = APIKey(**{"in": APIKeyIn.query}, name="key")  # pyright: ignore[reportArgumentType]
    api_key = AuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key="k")
    consent = r"oauth2 credential needs a user's consent .* a toolset asks no user for consent"
    with pytest.raises(NotImplementedError, match=consent):
        build(OAuth2(flows=OAuthFlows()), oauth2)
    with pytest.raises(NotImplementedError, match="service account needs exchanging"):
        build(HTTPBearer(), robot)
    with pytest.raises(NotImplementedError, match="came without an auth_credential"):
        build(HTTPBearer(), None)
    with pytest.raises(ValueError, match="only in a header: .* got in='query'"):
        build(in_query, api_key)
    with pytest.raises(ValueError, match="HTTP 'bearer' credential has no token"):
        build(HTTPBearer(), bearer(None))
    with pytest.raises(TypeError, match="must be a baton.auth.AuthCredential"):
        build(HTTPBearer(), {"auth_type": "http"})  # pyright: ignore[reportArgumentType]
    assert "client_secret" not in repr(oauth2)  # secrets are not shown


async def test_the_servers_resources_are_listed_and_read(http_url: str) -> None:
    toolset = McpToolset(connection_params=StreamableHTTPConnectionParams(url=http_url))

    assert await toolset.list_resources() == ["greeting", "pixel"]
    info = await toolset.get_resource_info("greeting")
    [content] = await toolset.read_resource("greeting")

    assert (info["uri"], info["mimeType"]) == ("res://greeting", "text/plain")
    assert content.text == "hello"
    with pytest.raises(ValueError, match="Resource with name 'absent' not found"):
        await toolset.read_resource("absent")
    await toolset.close()
    # With use_mcp_resources, load_mcp_resource comes after the tools the filter chose,
    # prefixed as they are.
    loading = McpToolset(
        connection_params=StreamableHTTPConnectionParams(url=http_url),
        tool_filter=["add"],
        tool_name_prefix="srv",
        use_mcp_resources=True,
    )
    assert [t.name for t in await loading.get_tools_with_prefix()] == [
        "srv_add",
        "srv_load_mcp_resource",
    ]
    await loading.close()


class TokenEndpoint(http.server.BaseHTTPRequestHandler):
    """An OAuth2 token endpoint on 127.0.0.1: the client `c` with secret `s` (HTTP basic)
    gets the next token of `tokens`; anyone else is refused. Requests are kept."""

    tokens: ClassVar[list[str]] = []
    requests: ClassVar[list[tuple[str, str, str]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        basic = self.headers.get("Authorization", "")
        self.requests.append((self.path, basic, body))
        good = basic == "Basic " + base64.b64encode(b"c:s").decode()
        if good and body == "grant_type=client_credentials":
            status, answer = 200, {"access_token": self.tokens.pop(0), "expires_in": 3600}
        else:
            status, answer = 401, {"error": "invalid_client"}
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture
def token_url() -> Iterator[str]:
    TokenEndpoint.tokens[:] = ["cc-1", "cc-2"]
    TokenEndpoint.requests.clear()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), TokenEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/token"
    server.shutdown()
    server.server_close()


def client_credentials(token_url: str) -> OAuth2:
    flow = OAuthFlowClientCredentials(tokenUrl=token_url, scopes={})
    return OAuth2(flows=OAuthFlows(clientCredentials=flow))


def oauth2_credential(
    kind: AuthCredentialTypes = AuthCredentialTypes.OAUTH2, **fields: str
) -> AuthCredential:
    return AuthCredential(auth_type=kind, oauth2=OAuth2Auth.model_validate(fields))


async def test_an_oauth2_or_openid_access_token_is_sent_as_a_bearer_token(http_url: str) -> None:
    params = StreamableHTTPConnectionParams(url=http_url)
    code_flow = OAuthFlowAuthorizationCode(
        authorizationUrl="https://idp.example/auth", tokenUrl="https://idp.example/token"
    )
    for scheme, credential in [
        (
            OAuth2(flows=OAuthFlows(authorizationCode=code_flow)),
            oauth2_credential(access_token="at-1"),
        ),
        (
            OpenIdConnect(openIdConnectUrl="https://idp.example/.well-known/openid-configuration"),
            oauth2_credential(AuthCredentialTypes.OPEN_ID_CONNECT, access_token="at-1"),
        ),
    ]:
        toolset = McpToolset(
            connection_params=params, auth_scheme=scheme, auth_credential=credential
        )
        assert await sent_credentials(toolset) == {
            "authorization": "Bearer at-1",
            "x-api-key": None,
        }


async def test_the_client_credentials_grant_gets_the_token_from_the_token_endpoint(
    http_url: str, token_url: str
) -> None:
    params = StreamableHTTPConnectionParams(url=http_url)
    toolset = McpToolset(
        connection_params=params,
        auth_scheme=client_credentials(token_url),
        auth_credential=oauth2_credential(client_id="c", client_secret="s"),
    )

    assert await sent_credentials(toolset) == {"authorization": "Bearer cc-1", "x-api-key": None}
    # Once for the listing and the call: the token is kept until it expires.
    assert TokenEndpoint.requests == [
        ("/token", "Basic " + base64.b64encode(b"c:s").decode(), "grant_type=client_credentials")
    ]
    # An OpenID Connect configuration listing the grant (the reference's
    # OpenIdConnectWithConfig) names its token endpoint.
    oidc = SimpleNamespace(
        type_="openIdConnect",
        token_endpoint=token_url,
        grant_types_supported=["authorization_code", "client_credentials"],
    )
    credential = oauth2_credential(
        AuthCredentialTypes.OPEN_ID_CONNECT, client_id="c", client_secret="s"
    )
    by_oidc = McpToolset(connection_params=params, auth_scheme=oidc, auth_credential=credential)
    assert await sent_credentials(by_oidc) == {"authorization": "Bearer cc-2", "x-api-key": None}
    refused = McpToolset(
        connection_params=params,
        auth_scheme=client_credentials(token_url),
        auth_credential=oauth2_credential(client_id="c", client_secret="wrong"),
    )
    failed = f"client-credentials token request to {token_url} failed: HTTP 401"
    with pytest.raises(ConnectionError, match=failed):
        await refused.get_tools()
    await refused.close()


def test_an_oauth2_credential_without_a_token_or_a_grant_it_can_use_is_refused() -> None:
    params = StreamableHTTPConnectionParams(url="http://127.0.0.1:1/mcp")
    grant = client_credentials("http://127.0.0.1:1/token")

    def build(scheme: object, credential: AuthCredential) -> McpToolset:
        return McpToolset(connection_params=params, auth_scheme=scheme, auth_credential=credential)

    with pytest.raises(ValueError, match="has neither an access_token nor a client_id"):
        build(grant, oauth2_credential())
    with pytest.raises(ValueError, match="openIdConnect credential has no oauth2"):
        build(grant, AuthCredential(auth_type=AuthCredentialTypes.OPEN_ID_CONNECT))
    consent = r"needs a user's consent .*OAuth2Auth\(access_token=...\)"
    with pytest.raises(NotImplementedError, match=consent):
        build(HTTPBearer(), oauth2_credential(client_id="c", client_secret="s"))
    jwt = oauth2_credential(
        client_id="c", client_secret="s", token_endpoint_auth_method="private_key_jwt"
    )
    with pytest.raises(NotImplementedError, match="authenticates by private_key_jwt"):
        build(grant, jwt)
