"""Connections to an MCP server: the parameters of each transport, and the sessions an
McpToolset keeps open (one per distinct set of request headers; one for a stdio server),
reused across calls and turns, reopened when they died, closed with the toolset. An HTTP
session unused for `SESSION_IDLE_TIMEOUT` seconds (15 minutes, as the reference) closes
itself (the next call opens a new one): a header_provider giving each user their own
session must not keep every one open for the life of the process.

A session is owned by a task of its own: the SDK's transports are anyio task groups,
which must be entered and left by one task, while tool calls come from the agent's tasks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, AsyncExitStack, suppress
from types import TracebackType
from typing import Any, Final, TextIO, TypeAlias, TypeVar, final

import anyio
from pydantic import BaseModel, ConfigDict, Field

from baton.auth import ClientCredentialsGrant
from baton.tools.mcp_tool.sdk import (
    CLIENT_INFO,
    ClientSession,
    ElicitationFnT,
    McpError,
    SamplingCapability,
    SamplingFnT,
    StdioServerParameters,
    create_mcp_http_client,
    http,
    read_timeout,
    sse_client,
    stdio_client,
    streamable_http_client,
)

__all__ = [
    "SESSION_IDLE_TIMEOUT",
    "ConnectionParams",
    "MCPSessionManager",
    "SseConnectionParams",
    "SseServerParams",
    "StdioConnectionParams",
    "StdioServerParameters",
    "StreamableHTTPConnectionParams",
    "StreamableHTTPServerParams",
]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

SESSION_IDLE_TIMEOUT: Final = 900.0
"""Seconds an HTTP session may go unused (no call in flight, none handed out) before it
closes itself, as the reference's pool closes idle sessions."""


class StdioConnectionParams(BaseModel):
    """A local MCP server, started as a subprocess that speaks MCP on its stdin/stdout.

    Args:
        server_params: the command, its arguments, environment and working directory.
        timeout: seconds to start the server and open the session, and the most any
            request (a tool call too) may take.
    """

    model_config = ConfigDict(extra="forbid")

    server_params: StdioServerParameters
    timeout: float = Field(default=5.0, gt=0)


class _HttpConnection(BaseModel):
    """What both HTTP transports take.

    Args:
        url: the server's endpoint.
        headers: sent with every request.
        timeout: seconds to connect and open the session.
        sse_read_timeout: the most seconds to wait for the server's next event (for
            streamable HTTP: the most a request, a tool call too, may take).
        httpx_client_factory: makes the HTTP client (called with `headers`, `timeout`,
            `auth`), e.g. for proxies or TLS settings.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    url: str
    headers: dict[str, Any] | None = None
    timeout: float = Field(default=5.0, gt=0)
    sse_read_timeout: float = Field(default=300.0, gt=0)
    httpx_client_factory: Callable[..., Any] = create_mcp_http_client


@final
class SseConnectionParams(_HttpConnection):
    """An MCP server over HTTP with server-sent events (the older HTTP transport), at
    `url` (its SSE endpoint); see `_HttpConnection` for the other fields."""


@final
class StreamableHTTPConnectionParams(_HttpConnection):
    """An MCP server over streamable HTTP, at `url` (e.g. "http://127.0.0.1:8000/mcp");
    see `_HttpConnection` for the other fields.

    Args:
        terminate_on_close: end the session on the server when it is closed.
    """

    terminate_on_close: bool = True


SseServerParams = SseConnectionParams
"""The reference's older name of `SseConnectionParams`."""
StreamableHTTPServerParams = StreamableHTTPConnectionParams
"""The reference's older name of `StreamableHTTPConnectionParams`."""

ConnectionParams: TypeAlias = (
    StdioServerParameters
    | StdioConnectionParams
    | SseConnectionParams
    | StreamableHTTPConnectionParams
)
"""How to reach an MCP server; a bare `StdioServerParameters` has a 5 second timeout."""

_HttpParams: TypeAlias = SseConnectionParams | StreamableHTTPConnectionParams


@final
class MCPSessionManager:
    """The open sessions to one MCP server, by request headers.

    Args:
        connection_params: how to reach the server.
        errlog: where a stdio server's stderr goes.
        idle_timeout: seconds after which an HTTP session nobody uses closes itself (a
            call in flight keeps it open however long it runs); a stdio server's session
            stays open until closed.
        sampling_callback: answers the server's requests for a completion from the
            client's model (`sampling/createMessage`): an async function of the SDK's
            (context, CreateMessageRequestParams) returning a CreateMessageResult (or
            ErrorData). Without it the client offers no sampling.
        sampling_capabilities: the sampling capability the client declares with it.
        elicitation_callback: answers the server's requests for the user's input
            (`elicitation/create`): an async function of (context, ElicitRequestParams)
            returning an ElicitResult (or ErrorData).
        auth_headers: headers carrying the toolset's credential, sent with every HTTP
            request over any others of the same name (as the reference puts its auth
            headers over a header_provider's), or the OAuth2 client-credentials grant
            that gets them (a new token opens a new session).

    Raises:
        TypeError: `connection_params` is none of the connection parameter classes.
        ValueError: an idle_timeout that is not positive.
    """

    def __init__(
        self,
        connection_params: ConnectionParams,
        errlog: TextIO = sys.stderr,
        *,
        idle_timeout: float = SESSION_IDLE_TIMEOUT,
        sampling_callback: SamplingFnT | None = None,
        sampling_capabilities: SamplingCapability | None = None,
        elicitation_callback: ElicitationFnT | None = None,
        auth_headers: dict[str, str] | ClientCredentialsGrant | None = None,
    ) -> None:
        if isinstance(connection_params, StdioServerParameters):
            connection_params = StdioConnectionParams(server_params=connection_params)
        if not isinstance(connection_params, _HttpParams | StdioConnectionParams):  # pyright: ignore[reportUnnecessaryIsInstance] -- checks the caller's value
            raise TypeError(
                "connection_params must be StdioConnectionParams, SseConnectionParams, "
                "StreamableHTTPConnectionParams or mcp's StdioServerParameters, got "
                f"{connection_params!r}."
            )
        if idle_timeout <= 0:
            raise ValueError(f"idle_timeout must be positive seconds, got {idle_timeout}.")
        self.connection_params: StdioConnectionParams | _HttpParams = connection_params
        self._errlog = errlog
        self._auth_headers = auth_headers or {}
        if isinstance(connection_params, StdioConnectionParams):
            self._auth_headers = {}  # a stdio server has no headers: no token to ask for
        self._idle_timeout = (
            None if isinstance(connection_params, StdioConnectionParams) else idle_timeout
        )
        # What the client answers for the server, passed to each session as the SDK
        # names it; only those given, so an SDK without one of them is not asked.
        given = {
            "sampling_callback": sampling_callback,
            "sampling_capabilities": sampling_capabilities,
            "elicitation_callback": elicitation_callback,
        }
        self._answers = {name: value for name, value in given.items() if value is not None}
        self._sessions: dict[str, _Session] = {}
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def timeout(self) -> float:
        """Seconds to open a session (and, for stdio, the most any request may take)."""
        return self.connection_params.timeout

    async def create_session(self, headers: dict[str, str] | None = None) -> ClientSession:
        """The open session for these headers: the pooled one while it lives (on this event
        loop), else a new one. It counts as used now: an HTTP session closes itself once
        unused for the idle timeout, so use it within that or ask again.

        Args:
            headers: request headers besides the connection's own (ignored for stdio).

        Raises:
            ConnectionError: the server could not be started or reached, or did not open a
                session within the timeout.
        """
        return (await self._session(headers)).session

    async def run(
        self,
        work: Callable[[ClientSession], Coroutine[Any, Any, _T]],
        headers: dict[str, str] | None = None,
    ) -> _T:
        """Run `work` on the session for these headers; it fails at once when the
        connection is lost meanwhile. A session the server has ended is dropped, so the
        next call opens a new one.

        Raises:
            ConnectionError: no session could be opened, or the connection was lost.
            McpError: the server answered with an error.
        """
        session = await self._session(headers)
        try:
            return await session.guarded(work(session.session))
        except McpError as error:
            if _ends_session(error):
                await self._discard(session)
            raise
        except Exception:
            # Not the server's answer: the transport failed; the next call opens anew.
            await self._discard(session)
            raise

    async def close(self) -> None:
        """Close every session (a stdio server's process ends). The manager stays usable:
        the next call opens a session again."""
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            await session.close()

    def session_key(self, headers: dict[str, str] | None) -> str:
        """Which session calls with these headers share (the connection's headers merged
        in; one key for stdio). A client-credentials grant's token is left out: it is the
        same client's whichever token it holds."""
        auth = self._auth_headers if isinstance(self._auth_headers, dict) else {}
        return self._key(self._headers(headers, auth))

    @staticmethod
    def _key(merged: dict[str, str] | None) -> str:
        return "" if merged is None else json.dumps(merged, sort_keys=True)

    async def _session(self, headers: dict[str, str] | None) -> _Session:
        auth = self._auth_headers
        if isinstance(auth, ClientCredentialsGrant):
            auth = await auth.headers()
        merged = self._headers(headers, auth)
        key = self._key(merged)
        loop = asyncio.get_running_loop()
        lock = self._locks.setdefault(loop, asyncio.Lock())
        async with lock:
            for ended in [s for s in self._sessions.values() if s.ended and s.loop is loop]:
                await self._discard(ended)  # e.g. closed itself when idle
            pooled = self._sessions.get(key)
            if pooled is not None and pooled.loop is loop and pooled.alive:
                pooled.touch()
                return pooled
            if pooled is not None:
                await self._discard(pooled)
            session = _Session(
                self._transport(merged),
                read_timeout=self._read_timeout(),
                idle_timeout=self._idle_timeout,
                answers=self._answers,
            )
            await session.open(self.timeout, what=self._describe())
            self._sessions[key] = session
            return session

    async def _discard(self, session: _Session) -> None:
        for key, pooled in list(self._sessions.items()):
            if pooled is session:
                del self._sessions[key]
        await session.close()

    def _headers(
        self, headers: dict[str, str] | None, auth: dict[str, str]
    ) -> dict[str, str] | None:
        """The connection's headers with the call's over them, and the credential's
        (`auth`) over both (whatever their case); None for stdio."""
        params = self.connection_params
        if isinstance(params, StdioConnectionParams):
            return None
        merged = {**{k: str(v) for k, v in (params.headers or {}).items()}, **(headers or {})}
        if auth:
            taken = {name.lower() for name in auth}
            merged = {k: v for k, v in merged.items() if k.lower() not in taken}
            merged.update(auth)
        return merged

    def _read_timeout(self) -> float:
        params = self.connection_params
        if isinstance(params, StdioConnectionParams):
            return params.timeout
        return params.sse_read_timeout

    def _describe(self) -> str:
        params = self.connection_params
        if isinstance(params, StdioConnectionParams):
            command = [params.server_params.command, *params.server_params.args]
            return f"MCP server {' '.join(command)!r}"
        return f"MCP server at {params.url}"

    def _transport(self, merged: dict[str, str] | None) -> AbstractAsyncContextManager[Any]:
        """The transport to the server, with these (merged) headers for HTTP."""
        params = self.connection_params
        if isinstance(params, StdioConnectionParams):
            return stdio_client(params.server_params, errlog=self._errlog)
        timeout = http.Timeout(params.timeout, read=params.sse_read_timeout)
        if isinstance(params, SseConnectionParams):
            return sse_client(
                params.url,
                headers=merged,
                timeout=params.timeout,
                sse_read_timeout=params.sse_read_timeout,
                httpx_client_factory=params.httpx_client_factory,
            )
        client = params.httpx_client_factory(headers=merged, timeout=timeout)
        return _ClientClosedAfter(
            client,
            streamable_http_client(
                params.url, http_client=client, terminate_on_close=params.terminate_on_close
            ),
        )


class _ClientClosedAfter:
    """A streamable HTTP transport, then the HTTP client it was given: the SDK leaves a
    client it did not make open."""

    def __init__(self, client: Any, transport: AbstractAsyncContextManager[Any]) -> None:
        self._client, self._transport = client, transport

    async def __aenter__(self) -> Any:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(self._client)
            streams = await stack.enter_async_context(self._transport)
            self._stack = stack.pop_all()
            return streams

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> bool | None:
        return await self._stack.__aexit__(kind, error, trace)


@final
class _Session:
    """One MCP session, owned by a task that opens the transport, initializes the session,
    waits until it is closed, then leaves both (a stdio server's process ends there).

    The task is stopped by anyio's cancellation (its scope), never by `Task.cancel`, which
    would cut through the SDK's shielded shutdown and leave a server process behind.
    """

    def __init__(
        self,
        transport: AbstractAsyncContextManager[Any],
        *,
        read_timeout: float,
        idle_timeout: float | None = None,
        answers: dict[str, Any] | None = None,
    ) -> None:
        self._transport = transport
        self._answers = answers or {}
        self._read_timeout = read_timeout
        self._idle_timeout = idle_timeout
        self._in_flight = 0
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._scope = anyio.CancelScope()
        self._task: asyncio.Task[None] | None = None
        self._session: ClientSession | None = None
        self.loop = asyncio.get_running_loop()
        self._last_used = self.loop.time()

    @property
    def session(self) -> ClientSession:
        if self._session is None:
            raise ConnectionError("the MCP session is not open")
        return self._session

    @property
    def alive(self) -> bool:
        """Whether the session can still be used: its owner task runs and its transport is
        open (a stdio server that exited closes it)."""
        if self._task is None or self._task.done() or self._closing.is_set():
            return False
        return self._session is None or not _transport_closed(self._session)

    @property
    def ended(self) -> bool:
        """Whether its owner task has finished (closed, idle too long, or failed)."""
        return self._task is not None and self._task.done()

    def touch(self) -> None:
        """Count the session as used now (its idle time starts again)."""
        self._last_used = self.loop.time()

    async def open(self, within: float, *, what: str) -> None:
        """Start the owner task and wait until the session is initialized.

        Raises:
            ConnectionError: it failed, or took longer than `within` seconds.
        """
        self._task = task = asyncio.create_task(self._own(within))
        ready = asyncio.create_task(self._ready.wait())
        try:
            await asyncio.wait({task, ready}, timeout=within, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            await self.close()
            raise
        finally:
            ready.cancel()
        if self._session is not None and not task.done():
            return
        await self.close()
        failure = None if task.cancelled() else task.exception()
        if failure is None or isinstance(failure, TimeoutError):
            reason = f"no session within {within} seconds"
        else:
            reason = _reason(failure)
        raise ConnectionError(
            f"Failed to create MCP session with {what}: {reason}. Check that the server "
            "starts and speaks MCP, or raise the connection's timeout."
        ) from failure

    async def guarded(self, work: Awaitable[_T]) -> _T:
        """`work`'s result, or ConnectionError as soon as the owner task ends (the
        transport failed) instead of waiting for the read timeout."""
        call = asyncio.ensure_future(work)
        owner = self._task
        if owner is None:
            call.cancel()
            raise ConnectionError("the MCP session is not open")
        self._in_flight += 1
        try:
            await asyncio.wait({call, owner}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._in_flight -= 1
            self.touch()
            if not call.done():
                call.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await call
        if not call.cancelled() and call.done():
            return call.result()
        failure = owner.exception() if not owner.cancelled() else None
        raise ConnectionError(f"connection to the MCP server lost: {_reason(failure)}") from failure

    async def close(self) -> None:
        """Have the owner task leave the session, and wait until it has (the SDK bounds
        its shutdown: a stdio server that does not exit when asked is killed). Safe to call
        again, and from another event loop."""
        task = self._task
        if task is None:
            return
        if self.loop is not asyncio.get_running_loop():
            if not self.loop.is_closed():  # a closed loop cancelled the task on its way out
                future = asyncio.run_coroutine_threadsafe(self.close(), self.loop)
                await asyncio.wrap_future(future)
            return
        self._closing.set()
        if not self._ready.is_set():
            self._scope.cancel()  # still opening
        await asyncio.wait({task})
        if self._session is not None and not task.cancelled() and task.exception() is not None:
            _log.warning("closing an MCP session failed: %s", _reason(task.exception()))

    async def _own(self, within: float) -> None:
        with self._scope:
            async with AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport)
                session = await stack.enter_async_context(
                    ClientSession(
                        streams[0],
                        streams[1],
                        read_timeout_seconds=read_timeout(self._read_timeout),
                        client_info=CLIENT_INFO,
                        **self._answers,
                    )
                )
                with anyio.fail_after(within):
                    await session.initialize()
                self._session = session
                self.touch()  # its idle time starts now: opening is not being unused
                self._ready.set()
                await self._until_closed_or_idle()

    async def _until_closed_or_idle(self) -> None:
        """Wait until the session is closed, or (with an idle timeout) until it has gone
        unused that long with no call in flight; then it closes itself."""
        timeout = self._idle_timeout
        if timeout is None:
            await self._closing.wait()
            return
        while not self._closing.is_set():
            due = self._last_used + timeout - self.loop.time()
            if due <= 0 and not self._in_flight:
                _log.info("closing an MCP session unused for %s seconds", timeout)
                self._closing.set()
                return
            with anyio.move_on_after(due if due > 0 else timeout):
                await self._closing.wait()


def _transport_closed(session: ClientSession) -> bool:
    """Whether the session's transport has closed, read as the reference reads it: the SDK
    has no public flag, so this reads its private ones (2.x: the dispatcher's; 1.x: the
    streams'); a session showing neither reads as open, and a call on it that fails drops
    it (see `MCPSessionManager.run`)."""
    dispatcher = getattr(session, "_dispatcher", None)
    if dispatcher is not None:
        return bool(getattr(dispatcher, "_closed", False))
    streams = (getattr(session, "_read_stream", None), getattr(session, "_write_stream", None))
    return any(bool(getattr(stream, "_closed", False)) for stream in streams)


def _ends_session(error: McpError) -> bool:
    """Whether the server says it no longer holds the session (streamable HTTP answers an
    unknown session id with 404, which the SDK reports this way; 1.x as code 32600)."""
    code, message = error.error.code, error.error.message
    return code == 32600 or (code == -32600 and message == "Session terminated")


def _reason(error: BaseException | None) -> str:
    """An error's message, the inner ones of an exception group joined."""
    if error is None:
        return "cancelled"
    if isinstance(error, BaseExceptionGroup):
        inner: tuple[BaseException, ...] = error.exceptions  # pyright: ignore[reportUnknownMemberType]
        return " | ".join(_reason(e) for e in inner)
    return str(error) or type(error).__name__
