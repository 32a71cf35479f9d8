"""The OpenAPI document is served, and a bounded schemathesis run finds no 5xx."""

from __future__ import annotations

import asyncio
from typing import Any

import hypothesis
import pytest
import schemathesis
from pydantic import JsonValue
from schemathesis.checks import not_a_server_error
from schemathesis.runner import events

from baton.server.settings import Limits
from tests.server.conftest import Live, StartLive


def fuzz(url: str) -> tuple[list[str], set[str]]:
    """Run schemathesis against the live server: the failures found, and what it called."""
    schemathesis.experimental.OPEN_API_3_1.enable()  # FastAPI documents OpenAPI 3.1
    schema = schemathesis.from_uri(f"{url}/openapi.json", base_url=url)
    # A pending stream never ends by design; it is tested in test_inbox.py.
    schema = schema.exclude(path_regex="/stream$")  # pyright: ignore[reportUnknownMemberType] -- schemathesis leaves a Pattern unparameterized
    settings = hypothesis.settings(
        max_examples=10,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[
            hypothesis.HealthCheck.too_slow,
            hypothesis.HealthCheck.filter_too_much,
        ],
    )
    runner = schemathesis.runner.from_schema(
        schema, checks=[not_a_server_error], hypothesis_settings=settings, request_timeout=10_000
    )
    problems: list[str] = []
    called: set[str] = set()
    for event in runner.execute():
        if isinstance(event, events.AfterExecution):
            called.add(event.result.verbose_name)
        if isinstance(event, events.AfterExecution) and event.status.value != "success":
            failed = [c for c in event.result.checks if c.value.value != "success"]
            details = "; ".join(
                f"{c.name} {c.response.status_code if c.response else '-'} "
                f"{c.example.method if c.example else ''} {c.example.url if c.example else ''} "
                f"{c.message}"
                for c in failed[:3]
            ) or "; ".join(str(e.exception) for e in event.result.errors[:2])
            problems.append(f"{event.result.verbose_name}: {event.status.value}: {details}")
        if isinstance(event, events.InternalError):
            problems.append(f"internal error: {event.message}")
    return problems, called


async def test_openapi_document_lists_the_routes(live: Live) -> None:
    document = (await live.client.get("/openapi.json")).json()
    paths = set(document["paths"])
    assert {
        "/list-apps",
        "/run",
        "/run_sse",
        "/apps/{app_name}/users/{user_id}/sessions",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}",
        "/apps/{app_name}/users/{user_id}/pending",
        "/apps/{app_name}/users/{user_id}/sessions/{session_id}/interrupts/{interrupt_id}/respond",
    } <= paths


# schemathesis 3.38 resolves references through jsonschema's deprecated RefResolver.
@pytest.mark.filterwarnings("ignore:jsonschema.RefResolver is deprecated:DeprecationWarning")
async def test_schemathesis_finds_no_server_errors(live: Live) -> None:
    sid = await live.create("approval", "u")
    await live.start("approval", "u", sid)
    # schemathesis is synchronous; the server runs in this event loop, so it runs aside.
    problems, called = await asyncio.to_thread(fuzz, live.url)
    assert problems == []
    # Not vacuous: every documented operation but the endless pending stream was exercised.
    document = (await live.client.get("/openapi.json")).json()
    documented = {
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method in operations
        if not path.endswith("/stream")
    }
    assert called == documented


def nested_list(depth: int) -> JsonValue:
    value: JsonValue = 0
    for _ in range(depth):
        value = [value]
    return value


def send_hostile_bodies(url: str, sid: str) -> dict[str, tuple[int, int]]:
    """Every documented operation with a body, sent an oversized and a too-deep body.

    Returns each operation's two statuses; raises if a response is a server error or
    not a JSON refusal.
    """
    schemathesis.experimental.OPEN_API_3_1.enable()
    # schemathesis leaves much of its API untyped: Any keeps pyright strict elsewhere.
    schema: Any = schemathesis.from_uri(f"{url}/openapi.json", base_url=url)
    path = {"app_name": "approval", "user_id": "u", "session_id": sid, "interrupt_id": "approve"}
    bodies: list[JsonValue] = [{"x": " " * (SMALL.max_body + 1)}, {"x": nested_list(150)}]
    statuses: dict[str, tuple[int, int]] = {}
    for result in schema.get_all_operations():
        operation: Any = result.ok()
        if "requestBody" not in operation.definition.raw:
            continue
        seen: list[int] = []
        for body in bodies:
            params = {k: v for k, v in path.items() if "{" + k + "}" in str(operation.path)}
            case: Any = operation.make_case(
                path_parameters=params, body=body, media_type="application/json"
            )
            response: Any = case.call()
            case.validate_response(response, checks=(not_a_server_error,))
            refusal: JsonValue = response.json()
            assert isinstance(refusal, dict), response.text
            assert set(refusal) == {"detail", "error"}, response.text
            seen.append(int(response.status_code))
        statuses[str(operation.verbose_name)] = (seen[0], seen[1])
    return statuses


SMALL = Limits(max_body=64 * 1024)


@pytest.mark.filterwarnings("ignore:jsonschema.RefResolver is deprecated:DeprecationWarning")
async def test_schemathesis_oversized_and_deep_bodies_are_json_refusals(
    start_live: StartLive,
) -> None:
    live: Live = await start_live(limits=SMALL)
    sid = await live.create("approval", "u")
    await live.start("approval", "u", sid)
    statuses = await asyncio.to_thread(send_hostile_bodies, live.url, sid)
    assert statuses == {
        "POST /run": (413, 400),
        "POST /run_sse": (413, 400),
        "POST /apps/{app_name}/users/{user_id}/sessions": (413, 400),
        "POST /apps/{app_name}/users/{user_id}/sessions/{session_id}": (413, 400),
        "PATCH /apps/{app_name}/users/{user_id}/sessions/{session_id}": (413, 400),
        "POST /apps/{app_name}/users/{user_id}/sessions/{session_id}/artifacts": (413, 400),
        "PATCH /apps/{app_name}/users/{user_id}/memory": (413, 400),
        "POST /apps/{app_name}/users/{user_id}/sessions/{session_id}/interrupts/"
        "{interrupt_id}/respond": (413, 400),
        "POST /apps/{app_name}/users/{user_id}/sessions/{session_id}/rewind": (413, 400),
        "POST /apps/{app_name}/users/{user_id}/sessions/{session_id}/fork": (413, 400),
    }
