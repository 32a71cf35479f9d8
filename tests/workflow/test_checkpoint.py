"""The checkpoint's records: the engine's shortcuts make what the plain constructors make."""

from __future__ import annotations

import dataclasses

from baton.workflow.checkpoint import RunRecord, RunStatus


def test_a_dispatched_run_is_the_record_the_constructor_makes() -> None:
    made = RunRecord.dispatched("b", "wf@1/b@2", "2", {"x": [1]}, True)
    expected = RunRecord("b", "wf@1/b@2", "2", RunStatus.RUNNING, {"x": [1]}, True)
    # Every field compared (one left unset would raise here), containers fresh per record.
    assert dataclasses.astuple(made) == dataclasses.astuple(expected)
    assert made == expected
    other = RunRecord.dispatched("b", "wf@1/b@3", "3", None, False)
    assert made.routes is not other.routes
    assert made.answers is not other.answers
    assert made.to_json() == expected.to_json()
