"""Time travel in the terminal: `baton sessions rewind`, on a SQLite file."""

from __future__ import annotations

import re
from pathlib import Path

from tests.cli.test_cli import EXAMPLES, baton, session_of

APP = str(EXAMPLES / "expense_approval")


def run_id(output: str) -> str:
    found = re.search(r"e-[0-9a-f]{8}-[0-9a-f-]{27}", output.replace("\n", ""))
    assert found, output
    return found.group(0)


def test_rewind_undoes_a_waiting_run_and_refuses_a_second_time(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _, out = baton("run", APP, "80 lunch", db=db)
    sid = session_of(out)
    code, out = baton("inspect", sid, "-p", APP, db=db)
    invocation = run_id(out)

    code, out = baton("sessions", "rewind", sid, invocation, "-p", APP, db=db)
    assert code == 0, out
    assert f"to before run {invocation}" in " ".join(out.split())
    code, out = baton("pending", "-p", APP, db=db)
    assert "review_0" not in out
    code, out = baton("inspect", sid, "-p", APP, db=db)
    assert "rewound" in out

    code, out = baton("sessions", "rewind", sid, invocation, "-p", APP, db=db)
    assert code == 1
    assert "InvocationRewoundError" in out
    assert "already rewound" in out
    code, out = baton("sessions", "rewind", sid, "e-nope", "-p", APP, db=db)
    assert code == 1
    assert "InvocationNotFoundError" in out
    code, out = baton("resume", sid, "-p", APP, "--answer", '{"approved": true}', db=db)
    assert code == 1, out


def test_checkpoints_and_a_fork_answered_differently(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _, out = baton("run", APP, "80 lunch", db=db)
    sid = session_of(out)
    code, out = baton("resume", sid, "-p", APP, "--answer", '{"approved": true}', db=db)
    assert "paid 80.00 for 'lunch'" in out

    code, out = baton("sessions", "checkpoints", sid, "-p", APP, db=db)
    assert code == 0, out
    flat = "".join(out.split())
    # The table folds long ids over several lines: join its first column's pieces.
    first_column = "".join(line.split("│")[1].strip() for line in out.splitlines() if "│" in line)
    question = re.search(r"question:[0-9a-f]{32}", first_column)
    assert question, out
    assert "start:e-" in flat
    assert "end:e-" in flat
    assert "review_0=" in flat

    code, out = baton(
        "sessions", "fork", sid, question.group(0), "-p", APP, "--new-session", "f1", db=db
    )
    assert code == 0, out
    assert "into session f1" in out
    assert "waits on review_0" in " ".join(out.split())
    code, out = baton("resume", "f1", "-p", APP, "--answer", '{"approved": false}', db=db)
    assert code in (0, 2), out
    assert "paid 80.00" not in out
    code, out = baton("sessions", "fork", sid, "start:e-nope", "-p", APP, db=db)
    assert code == 1
    assert "CheckpointNotFoundError" in out


def test_a_fork_after_a_step_is_continued_by_resume(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _, out = baton("run", APP, "80 lunch", db=db)
    sid = session_of(out)
    code, out = baton("sessions", "checkpoints", sid, "-p", APP, db=db)
    assert code == 0, out
    first_column = "".join(line.split("│")[1].strip() for line in out.splitlines() if "│" in line)
    step = re.search(r"step:[0-9a-f]{32}", first_column)  # after submit, before the review
    assert step, out

    code, out = baton(
        "sessions", "fork", sid, step.group(0), "-p", APP, "--new-session", "f2", db=db
    )
    assert code == 0, out
    flat = " ".join(out.split())
    continuing = re.search(r"baton resume f2 -p \S+ --db \S+ --invocation (e-[0-9a-f-]{36})", flat)
    assert continuing, out
    code, out = baton("resume", "f2", "-p", APP, "--invocation", continuing.group(1), db=db)
    assert code == 2, out  # it ran on from submit's step and waits at the review again
    assert "review_0" in out
