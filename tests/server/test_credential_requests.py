"""A tool's credential request over HTTP (SQLite): the reference's `adk_request_credential`
call reaches the client, a malformed answer is a 422 JSON that says what is wrong with
nothing stored, and the request's AuthConfig sent back with the credential resumes the
tool."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi.openapi.models import APIKey, APIKeyIn
from pydantic import JsonValue

from baton import App, Context, ResumabilityConfig, Workflow, node
from baton.agents import LlmAgent
from baton.auth import AuthCredential, AuthCredentialTypes
from baton.auth.auth_tool import AuthConfig
from baton.models import ScriptedModel
from baton.tools import ToolContext
from baton.types import FunctionCall
from tests.server.conftest import Live

CONFIG = AuthConfig(
    auth_scheme=APIKey.model_validate({"in": APIKeyIn.header, "name": "X-Key"}),
    raw_auth_credential=AuthCredential(auth_type=AuthCredentialTypes.API_KEY),
)


def fetch(tool_context: ToolContext) -> dict[str, JsonValue]:
    """Fetch the user's data."""
    credential = tool_context.get_auth_response(CONFIG)
    if credential is None:
        tool_context.request_credential(CONFIG)
        return {"pending": True}
    return {"key": credential.api_key}


def vault_app() -> App:
    model = ScriptedModel(responses=[[FunctionCall(id="call-1", name="fetch", args={})], "done"])
    agent = LlmAgent(name="vault", model=model, tools=[fetch])
    return App(
        name="vault", root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True)
    )


def answer(session: str, invocation: str, response: JsonValue) -> dict[str, JsonValue]:
    part: JsonValue = {
        "functionResponse": {
            "id": "adk-auth-call-1",
            "name": "adk_request_credential",
            "response": response,
        }
    }
    return {
        "appName": "vault",
        "userId": "u",
        "sessionId": session,
        "invocationId": invocation,
        "newMessage": {"role": "user", "parts": [part]},
    }


async def test_a_credential_answer_over_http_is_checked_then_resumes_the_tool(
    start_live: Any,
) -> None:
    live: Live = await start_live(apps=[vault_app()])
    session = await live.create("vault", "u")
    first = await live.start("vault", "u", session)
    [request] = [
        p["functionCall"]
        for e in first
        for p in e.get("content", {}).get("parts", [])
        if p.get("functionCall", {}).get("name") == "adk_request_credential"
    ]
    invocation = first[0]["invocationId"]
    before = (await live.client.get(f"/apps/vault/users/u/sessions/{session}")).json()

    bad = await live.client.post(
        "/run", json=answer(session, invocation, {"exchangedAuthCredential": {"authType": "x"}})
    )

    assert bad.status_code == 422, bad.text
    assert bad.json()["error"] == "InvalidResponseError"
    assert "the credential answer is not an AuthCredential" in bad.json()["detail"]
    after = (await live.client.get(f"/apps/vault/users/u/sessions/{session}")).json()
    assert after["events"] == before["events"]
    config: dict[str, JsonValue] = {**request["args"]["authConfig"]}
    config["exchangedAuthCredential"] = {"authType": "apiKey", "apiKey": "K1"}

    resumed = await live.client.post("/run", json=answer(session, invocation, config))

    assert resumed.status_code == 200, resumed.text
    results = [
        p["functionResponse"]["response"]
        for e in resumed.json()
        for p in e.get("content", {}).get("parts", [])
        if "functionResponse" in p and e["author"] == "vault"
    ]
    assert results == [{"key": "K1"}]


def node_vault_app() -> App:
    @node(auth_config=CONFIG)
    def with_key(ctx: Context) -> str:
        credential = ctx.get_auth_response(CONFIG)
        return f"key {credential.api_key if credential else None}"

    workflow = Workflow(name="nodes", edges=[("START", with_key)])
    return App(
        name="nodes", root_agent=workflow, resumability_config=ResumabilityConfig(is_resumable=True)
    )


async def test_a_workflow_nodes_credential_request_is_answered_at_its_respond_route(
    start_live: Any,
) -> None:
    """Its id (`wf_auth:<node path>`) holds a `/`, sent as %2F: the route takes it whole."""
    live: Live = await start_live(apps=[node_vault_app()])
    session = await live.create("nodes", "u")
    await live.start("nodes", "u", session)
    [row] = (await live.client.get("/apps/nodes/users/u/pending")).json()
    assert row["interruptId"] == "wf_auth:nodes@1/with_key@1"
    url = f"/apps/nodes/users/u/sessions/{session}/interrupts/{quote(row['interruptId'], safe='')}"

    answered = await live.client.post(f"{url}/respond", json={"response": "K2"})

    assert answered.status_code == 200, answered.text
    outputs = [e["output"] for e in answered.json() if "output" in e]
    assert outputs[-1] == "key K2"
    assert (await live.client.get("/apps/nodes/users/u/pending")).json() == []
