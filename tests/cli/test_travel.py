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
