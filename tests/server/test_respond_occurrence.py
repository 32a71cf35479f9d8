"""The respond route answers the occurrence it was sent for; Idempotency-Key retries act once."""

from __future__ import annotations

import asyncio

from baton import App, LlmAgent, LongRunningFunctionTool, ResumabilityConfig
from baton.models import ScriptedModel
from baton.types import FunctionCall
from tests.agents.test_long_running_progress import start_job
from tests.runner.test_occurrences import looping
from tests.server.conftest import Live, StartLive


async def _loop_server(start_live: StartLive) -> tuple[Live, str, str]:
    app = App(
        name="loop", root_agent=looping(), resumability_config=ResumabilityConfig(is_resumable=True)
    )
    live: Live = await start_live(apps=[app])
    sid = await live.create("loop", "u")
    await live.start("loop", "u", sid)
    return live, sid, f"/apps/loop/users/u/sessions/{sid}/interrupts/review/respond"


async def pending_items(live: Live, user: str = "u") -> list[dict[str, object]]:
    """The open questions of app 'loop' for `user`, as the pending route lists them."""
    r = await live.client.get(f"/apps/loop/users/{user}/pending")
    assert r.status_code == 200
    rows: list[dict[str, object]] = r.json()
    return rows


async def test_a_burst_of_answers_for_one_pass_answers_only_that_pass(
    start_live: StartLive,
) -> None:
    live, _, url = await _loop_server(start_live)
    (first,) = await pending_items(live)
    body = {"response": "ok", "occurrence": first["occurrence"]}
    replies = await asyncio.gather(*(live.client.post(url, json=body) for _ in range(20)))
    assert sorted(r.status_code for r in replies).count(200) == 1, [r.text for r in replies]
    assert {r.json()["error"] for r in replies if r.status_code != 200} <= {
        "AlreadyAnsweredError",
        "InvocationBusyError",
    }
    (second,) = await pending_items(live)  # pass 2 is open and nobody answered it
    assert second["occurrence"] != first["occurrence"]
    late = await live.client.post(url, json=body)
    assert late.status_code == 409
    assert first["occurrence"] in late.json()["detail"]


async def test_a_retry_with_the_same_idempotency_key_returns_the_first_reply(
    start_live: StartLive,
) -> None:
    live, sid, url = await _loop_server(start_live)
    (first,) = await pending_items(live)
    body = {"response": "ok", "occurrence": first["occurrence"]}
    headers = {"Idempotency-Key": "answer-1"}
    replies = await asyncio.gather(
        *(live.client.post(url, json=body, headers=headers) for _ in range(3))
    )
    assert [r.status_code for r in replies] == [200, 200, 200]
    assert replies[0].json() == replies[1].json() == replies[2].json()
    again = await live.client.post(url, json=body, headers=headers)
    assert again.json() == replies[0].json()
    session = (await live.client.get(f"/apps/loop/users/u/sessions/{sid}")).json()
    answers = [e for e in session["events"] if e["author"] == "user" and "content" in e]
    assert len(answers) == 2  # the start message and one answer
    other_key = await live.client.post(url, json=body, headers={"Idempotency-Key": "answer-2"})
    assert other_key.status_code == 409  # a new key acts, and the pass it meant is answered


def _job_app() -> tuple[App, ScriptedModel]:
    model = ScriptedModel(
        responses=[
            FunctionCall(id="c1", name="start_job", args={"what": "report"}),
            "Your request is pending.",
            "Half way there.",
            "Nearly done.",
            "Your report is ready.",
        ]
    )
    agent = LlmAgent(name="assistant", model=model, tools=[LongRunningFunctionTool(start_job)])
    app = App(
        name="jobs", root_agent=agent, resumability_config=ResumabilityConfig(is_resumable=True)
    )
    return app, model


async def test_progress_updates_over_the_respond_route_keep_the_call_open(
    start_live: StartLive,
) -> None:
    app, model = _job_app()
    live: Live = await start_live(apps=[app])
    sid = await live.create("jobs", "u")
    await live.start("jobs", "u", sid, "Make me the report")
    assert len(model.requests) == 2  # the call, then the reply to the tool's interim result
    url = f"/apps/jobs/users/u/sessions/{sid}/interrupts/c1/respond"

    async def listed() -> list[tuple[object, object]]:
        r = await live.client.get("/apps/jobs/users/u/pending")
        return [(item["interruptId"], item["occurrence"]) for item in r.json()]

    [(_, occurrence)] = await listed()
    update = {"response": {"done": "50%"}, "occurrence": occurrence, "willContinue": True}
    headers = {"Idempotency-Key": "progress-1"}
    replies = await asyncio.gather(
        *(live.client.post(url, json=update, headers=headers) for _ in range(3))
    )
    assert [r.status_code for r in replies] == [200, 200, 200]
    assert replies[0].json() == replies[1].json() == replies[2].json()
    assert len(model.requests) == 3  # the retried update acted once
    assert await listed() == [("c1", occurrence)]  # still open, the same occurrence

    second = {**update, "response": {"done": "90%"}}
    r = await live.client.post(url, json=second, headers={"Idempotency-Key": "progress-2"})
    assert r.status_code == 200, r.text
    final = {"response": {"url": "r.pdf"}, "occurrence": occurrence}
    r = await live.client.post(url, json=final, headers={"Idempotency-Key": "final"})
    assert r.status_code == 200, r.text
    said = [
        p["text"] for e in r.json() for p in e.get("content", {}).get("parts", []) if "text" in p
    ]
    assert said == ["Your report is ready."]
    assert len(model.requests) == 5
    assert await listed() == []

    late = await live.client.post(url, json=update, headers={"Idempotency-Key": "late"})
    assert late.status_code == 409
    assert late.json()["error"] == "AlreadyAnsweredError"
    assert len(model.requests) == 5


async def test_will_continue_on_a_question_over_the_respond_route_is_refused(
    start_live: StartLive,
) -> None:
    live, sid, url = await _loop_server(start_live)
    before = (await live.client.get(f"/apps/loop/users/u/sessions/{sid}")).json()["events"]

    r = await live.client.post(url, json={"response": "ok", "willContinue": True})

    assert r.status_code == 422
    assert r.json()["error"] == "InvalidMessageError"
    assert "will_continue" in r.json()["detail"]
    after = (await live.client.get(f"/apps/loop/users/u/sessions/{sid}")).json()["events"]
    assert after == before
