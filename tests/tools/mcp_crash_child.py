"""The process the MCP crash test kills: an agent whose model calls the MCP test server's
`charge` tool, on a SQLite file, over streamable HTTP.

    python -m tests.tools.mcp_crash_child DB_URL SESSION MCP_URL start|resume

"start" runs the agent and SIGKILLs itself when the server reports the call's progress
(the server has logged the call; its result is not back, nor committed). "resume" (the
test awaits `main` itself) continues the run, reading time a minute ahead, so the
killed process's lease has lapsed for it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from datetime import timedelta

from baton import App, LlmAgent, ResumabilityConfig, Runner, types
from baton.models import LlmRequest, ScriptedModel
from baton.models.scripted import ScriptItem
from baton.sessions.services import BaseSessionService
from baton.sessions.sql import SqlStore
from baton.sessions.store import SessionKey
from baton.tools.mcp_tool import McpToolset, StreamableHTTPConnectionParams
from baton.types import FunctionCall, SessionId

APP_NAME = "mcp_crash"
USER_ID = "u"


async def die(progress: float, total: float | None, message: str | None) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def respond(request: LlmRequest) -> ScriptItem:
    if not [r for c in request.contents for r in c.function_responses]:
        return [FunctionCall(id="c1", name="charge", args={"amount": 5})]
    return "charged"


async def main(db_url: str, session: str, mcp_url: str, action: str) -> None:
    resuming = action == "resume"
    store = SqlStore(db_url, clock=lambda: time.time() + (60 if resuming else 0))
    toolset = McpToolset(
        connection_params=StreamableHTTPConnectionParams(url=mcp_url),
        tool_filter=["charge"],
        progress_callback=None if resuming else die,
    )
    agent = LlmAgent(name="payer", model=ScriptedModel(responder=respond), tools=[toolset])
    runner = Runner(
        app=App(
            name=APP_NAME,
            root_agent=agent,
            resumability_config=ResumabilityConfig(is_resumable=True),
        ),
        session_service=BaseSessionService(store),
        lease_ttl=timedelta(seconds=30),
    )
    invocation = None
    message = types.Content(role="user", parts=[types.Part(text="charge 5")])
    if resuming:
        key = SessionKey(APP_NAME, USER_ID, SessionId(session))
        invocation, message = (await store.list_invocations(key))[-1].id, None
    try:
        async with asyncio.timeout(30):
            async for _ in runner.run_async(
                user_id=USER_ID, session_id=session, invocation_id=invocation, new_message=message
            ):
                pass
    finally:
        await runner.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
