"""The `baton` command, run in-process with piped stdin (and `baton web` as a process)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from baton.cli import cli
from baton.sessions.sql import SqlStore
from baton.sessions.store import InvocationStatus, SessionKey, StepCommit
from baton.types import InvocationId, SessionId
from tests.server.processes import BATON, HTTP_TIMEOUT, serving

EXAMPLES = Path(__file__).parents[2] / "examples"
APP = str(EXAMPLES / "expense_approval")


def baton(*args: str, stdin: str = "", db: Path | None = None) -> tuple[int, str]:
    extra = ["--db", str(db)] if db else []
    # In a thread of its own: asyncio.run would otherwise drop (and leak) the event loop
    # pytest-asyncio leaves installed in the main thread after an async test.
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(CliRunner().invoke, cli, [*args, *extra], input=stdin).result()
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def session_of(output: str) -> str:
    found = re.search(r"session ([0-9a-f-]{36})", output)
    assert found, output
    return found.group(1)


def test_run_answers_from_stdin_through_the_review_loop(tmp_path: Path) -> None:
    answers = (
        '{"approved": false, "adjusted_amount": 100}\n{"approved": true, "category": "travel"}\n'
    )
    code, out = baton("run", APP, "120.5 taxi", stdin=answers, db=tmp_path / "s.db")
    assert code == 0, out
    assert "Approve 120.50 for 'taxi'?" in out
    assert "Approve 100.00 for 'taxi'?" in out
    assert "paid 100.00 for 'taxi' via payroll (travel)" in out
    assert "adjusted_amount" in out  # the schema is shown with the question


def test_paused_run_can_be_listed_resumed_and_inspected(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    code, out = baton("run", APP, "80 lunch", db=db)
    assert code == 2, out
    assert "paused" in out
    sid = session_of(out)
    code, out = baton("pending", "-p", str(EXAMPLES), db=db)
    assert code == 0
    assert "review_0" in out
    code, out = baton("resume", sid, "-p", str(EXAMPLES), "--answer", '{"approved": "x"}', db=db)
    assert code == 1
    assert "InvalidResponseError" in out
    assert "'x' is not of type 'boolean'" in out
    code, out = baton("resume", sid, "-p", str(EXAMPLES), "--answer", '{"approved": true}', db=db)
    assert code == 0, out
    assert "paid 80.00 for 'lunch'" in out
    code, out = baton("inspect", sid, "-p", str(EXAMPLES), db=db)
    assert code == 0
    assert re.search(r"answered .*review_0.*│ user", out.replace("\n", " ")), out
    assert "completed" in out
    code, out = baton("sessions", "list", "-p", str(EXAMPLES), db=db)
    assert sid[:8] in out
    code, out = baton("sessions", "delete", sid, "-p", str(EXAMPLES), db=db)
    assert code == 0
    code, out = baton("sessions", "show", sid, "-p", str(EXAMPLES), db=db)
    assert code == 1
    assert "SessionNotFoundError" in out


def test_resume_asks_on_stdin_when_no_answer_is_given(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _, out = baton("run", APP, "5 coffee", db=db)
    sid = session_of(out)
    code, out = baton("resume", sid, "-p", APP, stdin="maybe\n", db=db)
    assert code == 1  # neither y/n nor an object: refused, nothing stored
    # "yes" decides the one required yes/no field ("approved"); the rest keep defaults.
    code, out = baton("resume", sid, "-p", APP, stdin="yes\n", db=db)
    assert code == 0, out
    assert "paid 5.00" in out


def test_run_json_prints_wire_events(tmp_path: Path) -> None:
    code, out = baton("run", APP, "7 pens", "--json", db=tmp_path / "s.db")
    assert code == 2
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    # Signed by the workflow, as in the reference; the node is the last part of the path.
    assert [e["author"] for e in events] == ["expense_workflow", "expense_workflow"]
    assert [e["nodeInfo"]["path"] for e in events] == [
        "expense_workflow@1/submit@1",
        "expense_workflow@1/review@1",
    ]
    assert events[-1]["longRunningToolIds"] == ["review_0"]


def test_help_teaches_with_examples() -> None:
    commands = [["run"], ["resume"], ["web"], ["api_server"], ["pending"], ["inspect"]]
    commands += [["sessions", "list"], ["sessions", "show"], ["sessions", "delete"]]
    for command in commands:
        code, out = baton(*command, "--help")
        assert code == 0
        assert "Example" in out, command


def test_a_broken_app_folder_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "agents" / "broken"
    broken.mkdir(parents=True)
    (broken / "agent.py").write_text("import not_a_module_anywhere\n")
    code, out = baton("pending", "-p", str(tmp_path / "agents"))
    assert code == 1
    assert "broken" in out
    assert "not_a_module_anywhere" in out


@pytest.mark.slow
def test_web_prints_its_url_and_serves_the_inbox(tmp_path: Path) -> None:
    args = [str(BATON), "web", str(EXAMPLES), "--port", "0", "--db", str(tmp_path / "w.db")]
    with serving(args) as url:
        assert "expense_approval" in httpx.get(f"{url}/list-apps", timeout=HTTP_TIMEOUT).json()
        assert "<title>baton" in httpx.get(url, timeout=HTTP_TIMEOUT).text


def test_run_and_list_on_a_database_url(emptied_store_url: str) -> None:
    answers = '{"approved": true}\n'
    code, out = baton("run", APP, "3 stamps", "--db", emptied_store_url, stdin=answers)
    assert code == 0, out
    assert "paid 3.00 for 'stamps'" in out
    code, out = baton("sessions", "list", "-p", APP, "--db", emptied_store_url)
    assert code == 0
    assert "completed" in out


def test_pending_filters_by_app_and_says_where_apps_are_missing(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    baton("run", APP, "taxi 42 EUR", "--user", "ann", db=db)
    code, out = baton(
        "pending", "-p", str(EXAMPLES), "--app", "expense_approval", "-u", "ann", db=db
    )
    assert code == 0
    assert "review_0" in out
    assert "Approve" in out
    code, out = baton("pending", "-p", str(EXAMPLES), "--app", "nope", db=db)
    assert code == 1
    assert "'nope' is not served" in out
    code, out = baton("pending", "-p", str(tmp_path), db=db)
    assert code == 1
    assert "holds no app folders" in " ".join(out.split())  # wrapped where the path ends


FLAKY = """
from pathlib import Path

from baton import Workflow

MARK = Path(__file__).with_name("failed-once")
RUNS = Path(__file__).with_name("runs")


def first(node_input):
    with RUNS.open("a") as runs:
        runs.write("first\\n")
    return "one"


def flaky(node_input):
    if not MARK.exists():
        MARK.write_text("x")
        raise RuntimeError("the network blinked")
    return f"{node_input} then two"


root_agent = Workflow(name="flaky_wf", edges=[("START", first, flaky)])
"""


def failed_flaky_run(tmp_path: Path) -> tuple[Path, Path, str]:
    """The flaky app's folder, its database, and the output of its first run (it fails)."""
    folder = tmp_path / "agents" / "flaky"
    folder.mkdir(parents=True)
    (folder / "agent.py").write_text(FLAKY)
    db = tmp_path / "s.db"
    code, out = baton("run", str(folder), "go", db=db)
    assert code == 1
    return folder, db, out


def test_resume_continues_a_failed_run_without_redoing_finished_steps(tmp_path: Path) -> None:
    folder, db, out = failed_flaky_run(tmp_path)
    assert "RuntimeError: the network blinked" in out
    sid = session_of(out)
    assert f"baton resume {sid}" in " ".join(out.split())
    code, out = baton("resume", sid, "-p", str(folder), db=db)
    assert code == 0, out
    assert "one then two" in out
    assert (folder / "runs").read_text() == "first\n"


def test_resume_refuses_an_unknown_run_and_an_answer_to_no_question(tmp_path: Path) -> None:
    folder, db, out = failed_flaky_run(tmp_path)
    sid = session_of(out)
    code, out = baton("resume", sid, "-p", str(folder), "--invocation", "e-nope", db=db)
    assert code == 1
    said = " ".join(out.split())
    assert f"InvocationNotFoundError: session '{sid}' has no run 'e-nope'" in said
    assert said.endswith("check the id with `baton inspect`.")
    code, out = baton("resume", sid, "-p", str(folder), "--answer", "true", db=db)
    assert code == 1
    said = " ".join(out.split())
    assert said.startswith("UnknownInterruptError: run 'e-")
    assert said.endswith(
        "asks no open question, so --answer has nothing to answer; drop --answer to "
        "continue the run."
    )
    # Neither refusal ran anything: the failed node is still to run, the first not again.
    assert (folder / "runs").read_text() == "first\n"
    code, out = baton("resume", sid, "-p", str(folder), db=db)
    assert code == 0, out
    assert "one then two" in out


@pytest.mark.parametrize(
    ("db", "said"),
    [
        (
            "mssql://127.0.0.1/baton",
            "DatabaseUnavailableError: --db: unsupported database URL 'mssql://127.0.0.1/baton'",
        ),
        (
            # Port 1 on loopback: nothing listens there, so the connection is refused.
            "mysql+asyncmy://root@127.0.0.1:1/baton",
            "DatabaseUnavailableError: cannot open the database:",
        ),
        (
            # Port 1 on loopback: nothing listens there, so the connection is refused.
            "postgresql+asyncpg://127.0.0.1:1/baton",
            "DatabaseUnavailableError: cannot open the database: ConnectionRefusedError:",
        ),
        (
            "/no/such/folder/sessions.db",
            "DatabaseUnavailableError: cannot open the database: OperationalError:",
        ),
    ],
)
def test_a_database_that_cannot_be_used_is_named_before_anything_runs(db: str, said: str) -> None:
    for command in (["sessions", "list", "-p", str(EXAMPLES)], ["run", APP, "5 pens"]):
        code, out = baton(*command, "--db", db)
        assert code == 1
        text = " ".join(out.split())
        assert text.startswith(said), text
        assert "Traceback" not in out


def test_a_bad_allowed_origin_is_refused_before_the_server_starts(tmp_path: Path) -> None:
    code, out = baton(
        "api_server", str(EXAMPLES), "--allow-origin", "localhost:3000", db=tmp_path / "s.db"
    )
    assert code == 2
    assert "Invalid value for --allow-origin: allowed origin 'localhost:3000' is not an" in out
    assert not (tmp_path / "s.db").exists()  # refused before anything opened the database


# Stands in for an install without the `server` extra: its packages cannot be imported.
_WITHOUT_SERVER_EXTRA = """
import sys
for name in ("fastapi", "starlette", "uvicorn", "sse_starlette"):
    sys.modules[name] = None
from baton.cli import main
sys.argv = ["baton", *sys.argv[1:]]
main()
"""


def test_run_works_without_the_server_extra(tmp_path: Path) -> None:
    answer = '{"approved": true, "category": "meals"}\n'
    command = [sys.executable, "-c", _WITHOUT_SERVER_EXTRA, "run", APP, "9 pens"]
    done = subprocess.run(
        [*command, "--db", str(tmp_path / "s.db")],
        input=answer,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "paid 9.00 for 'pens' via payroll (meals)" in done.stdout


def test_serving_without_the_server_extra_names_the_extra_to_install(tmp_path: Path) -> None:
    command = [sys.executable, "-c", _WITHOUT_SERVER_EXTRA, "web", str(EXAMPLES)]
    done = subprocess.run(
        [*command, "--db", str(tmp_path / "s.db")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "ExtraNotInstalledError: baton web needs the 'uvicorn' package" in done.stdout
    assert "pip install 'baton[server]'" in done.stdout


async def test_sessions_prune_deletes_old_finished_sessions(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    forty_days_ago = time.time() - 40 * 24 * 3600
    store = SqlStore(f"sqlite+aiosqlite:///{db}", clock=lambda: forty_days_ago)
    for name, status in (("done", InvocationStatus.COMPLETED), ("asks", InvocationStatus.PAUSED)):
        await store.create_session("expense_approval", "ann", session_id=SessionId(name))
        await store.commit_step(
            StepCommit(
                session=SessionKey("expense_approval", "ann", SessionId(name)),
                invocation_id=InvocationId(f"inv-{name}"),
                expected_version=0,
                status=status,
                fingerprint="fp",
            )
        )
    await store.close()
    args = ("sessions", "prune", "-p", str(EXAMPLES), "--older-than", "30d")

    code, out = baton(*args, "--dry-run", db=db)
    assert code == 0, out
    assert "would delete 1 session(s) untouched for over 30 days" in out
    assert "done" in out
    assert "asks" not in out  # it waits for an answer: kept
    code, out = baton(*args, db=db)
    assert code == 0, out
    assert "deleted 1 session(s)" in out
    code, out = baton("sessions", "list", "-p", str(EXAMPLES), db=db)
    assert "asks" in out
    assert "done" not in out


@pytest.mark.parametrize("age", ["30", "-3d", "0d", "thirty days", "3w"])
def test_sessions_prune_refuses_an_age_it_cannot_read(tmp_path: Path, age: str) -> None:
    code, out = baton(
        "sessions", "prune", "-p", str(EXAMPLES), "--older-than", age, db=tmp_path / "s.db"
    )
    assert code == 2
    assert f"'{age}' is not an age; give a positive number with a unit: 30d" in out
    assert not (tmp_path / "s.db").exists()


# Stands in for an install without the OpenTelemetry SDK (`baton[otel]`).
_WITHOUT_OTEL_SDK = """
import sys
for name in ("opentelemetry.sdk", "opentelemetry.sdk.trace"):
    sys.modules[name] = None
from baton.cli import main
sys.argv = ["baton", *sys.argv[1:]]
main()
"""


def test_trace_to_ui_without_the_otel_sdk_names_the_extra_to_install(tmp_path: Path) -> None:
    command = [sys.executable, "-c", _WITHOUT_OTEL_SDK, "api_server", str(EXAMPLES)]
    done = subprocess.run(
        [*command, "--trace-to-ui", "--db", str(tmp_path / "s.db")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    said = " ".join(done.stdout.split())
    assert "ExtraNotInstalledError: --trace-to-ui needs the 'opentelemetry.sdk" in said
    assert "pip install 'baton[otel]'" in said


def test_server_limits_are_checked_and_named() -> None:
    code, out = baton("api_server", str(EXAMPLES), "--max-body", "lots")
    assert code == 2
    assert "'lots' is not a size; give bytes or a number with KB, MB or GB" in out
    code, out = baton("web", str(EXAMPLES), "--read-timeout", "0")
    assert code == 2
    assert "read_timeout (0.0) and keep_alive (5.0) must be positive seconds" in out


@pytest.mark.slow
def test_api_server_enforces_its_limits(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "baton"
    args = [str(exe), "api_server", str(EXAMPLES), "--port", "0", "--read-timeout", "0.5"]
    args += ["--db", str(tmp_path / "w.db")]
    env = {**os.environ, "COLUMNS": "200", "BATON_MAX_BODY": "1KB"}
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", proc.stdout.readline())
            assert found
            url = found.group(0)
            big = httpx.post(
                f"{url}run",
                content=b" " * 2048,
                headers={"content-type": "a/json"},
                timeout=HTTP_TIMEOUT,
            )
            assert (big.status_code, big.json()["error"]) == (413, "ContentTooLarge")
            assert "at most 1024 bytes" in big.json()["detail"]
            with socket.create_connection(
                ("127.0.0.1", int(found.group(1))), timeout=HTTP_TIMEOUT
            ) as sock:
                sock.sendall(b"GET /health HTTP/1.1\r\n")  # and never the rest
                reply = sock.recv(4096)  # the server's bound is 0.5 s; the socket's a minute
                assert reply.startswith(b"HTTP/1.1 408"), reply
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=HTTP_TIMEOUT)


@pytest.mark.slow
@pytest.mark.parametrize("asked", [False, True])
def test_the_access_log_has_a_line_per_request_only_when_asked(
    tmp_path: Path, *, asked: bool
) -> None:
    exe = Path(sys.executable).parent / "baton"
    args = [str(exe), "api_server", str(EXAMPLES), "--port", "0", "--db", str(tmp_path / "w.db")]
    args += ["--access-log"] if asked else []
    env = {**os.environ, "COLUMNS": "200"}
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    ) as proc:
        assert proc.stdout is not None
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", proc.stdout.readline())
        assert found
        assert httpx.get(f"{found.group(0)}health", timeout=HTTP_TIMEOUT).status_code == 200
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=HTTP_TIMEOUT)
    assert ('"GET /health HTTP/1.1" 200' in out) is asked, out


def test_an_agents_approval_is_answered_with_y_or_n(tmp_path: Path) -> None:
    """The refund tool declares its answer (RefundDecision), so y/n decide it."""
    agent = str(EXAMPLES / "approval_agent")
    code, out = baton("run", agent, "Please refund order 7", stdin="y\n", db=tmp_path / "s.db")
    assert code == 0, out
    assert "The refund for order 7 was approved." in out
    assert "issue_refund is waiting for your answer" in out  # the page's words for the card
    code, out = baton("run", agent, "Please refund order 42", stdin="n\n", db=tmp_path / "s.db")
    assert code == 0, out
    assert "The refund for order 42 was declined." in out
    # Anything that is neither y/n nor a matching answer is refused, nothing stored.
    code, out = baton("run", agent, "Please refund order 7", stdin="maybe\n", db=tmp_path / "s.db")
    assert code == 1
    assert "does not match its response_schema" in out


def test_a_tool_confirmation_is_answered_with_y_or_n(tmp_path: Path) -> None:
    """A tool that needs approval (bank_desk: over 100) asks for a ToolConfirmation:
    "y" confirms it and the money is sent; "n" rejects it and nothing is sent."""
    desk = str(EXAMPLES / "bank_desk")
    code, out = baton("run", desk, "Please send 250 to Bob", stdin="y\n", db=tmp_path / "s.db")
    assert code == 0, out
    assert "Answer y or n" in out
    assert "Done: 250 sent to Bob." in out
    code, out = baton("run", desk, "Please send 300 to Eve", stdin="n\n", db=tmp_path / "s.db")
    assert code == 0, out
    assert "The payment was not made" in out
    assert "sent to Eve" not in out


def test_the_printed_resume_command_works_as_printed(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    code, out = baton("run", APP, "9 pens", "--user", "ann", db=db)
    assert code == 2, out
    sid = session_of(out)
    printed = re.search(r"`baton resume (\S+) -p (\S+) --db (\S+)`", " ".join(out.split()))
    assert printed, out
    assert printed.groups() == (sid, APP, str(db))
    # No --user needed: the session is found by its id, whoever it belongs to.
    code, out = baton("resume", sid, "-p", APP, "--answer", "y", db=db)
    assert code == 0, out
    assert "paid 9.00 for 'pens'" in out
    code, out = baton("inspect", sid, "-p", APP, db=db)
    assert code == 0
    assert "│ ann" in out


_ASKING_WITH_A_DEADLINE = """
from pydantic import BaseModel
from baton import App, Context, RequestInput, ResumabilityConfig, Workflow

class Decision(BaseModel):
    approved: bool

async def ask(ctx: Context, node_input: object):
    yield RequestInput(
        interrupt_id="q", message="approve?", response_schema=Decision,
        timeout=3600, on_timeout={"approved": False},
    )

app = App(name="asking", root_agent=Workflow(name="asking", edges=[("START", ask)]),
          resumability_config=ResumabilityConfig(is_resumable=True))
"""


def test_pending_says_when_a_deadline_to_come_expires(tmp_path: Path) -> None:
    folder = tmp_path / "asking"
    folder.mkdir()
    (folder / "agent.py").write_text(_ASKING_WITH_A_DEADLINE)
    db = tmp_path / "s.db"
    _, out = baton("run", str(folder), "go", db=db)  # no answer on stdin: it pauses
    assert "paused" in out

    code, out = baton("pending", "-p", str(folder), db=db)
    assert code == 0, out
    assert re.search(r"in (59|60)m", out), out  # an hour from now, not "0s ago"
    assert "on_timeout" in out


@pytest.mark.parametrize("command", ["api_server", "web", "worker"])
def test_bad_operation_options_are_refused_naming_the_option(command: str, tmp_path: Path) -> None:
    refused = {
        ("--lease-ttl", "-5"): "--lease-ttl",
        ("--lease-ttl", "inf"): "--lease-ttl",
        ("--grace", "-1"): "--grace",
        ("--grace", "inf"): "--grace",
        ("--worker-id", ""): "may not be empty",
        ("--worker-id", "web/1"): "may not hold '/'",
        ("--worker-id", "web\t1"): "control characters",
        ("--worker-id", "w" * 201): "at most 200 characters",
        ("--notify-url", "ftp://hooks/x", "--notify-secret", "s"): "not an http(s) URL",
        ("--notify-url", "http://127.0.0.1:9/x"): "give a secret",
        ("--notify-secret", "s"): "no --notify-url",
        ("--notify-timeout", "5"): "--notify-timeout is given but no --notify-url",
        ("--notify-url", "http://127.0.0.1:9/x", "--notify-secret", "s", "--notify-timeout", "0"): (
            "must be a finite number of seconds above 0"
        ),
        (
            "--notify-url",
            "http://127.0.0.1:9/x",
            "--notify-secret",
            "s",
            "--notify-timeout",
            "inf",
        ): ("must be a finite number of seconds above 0"),
        ("--notify-url", "http://127.0.0.1:9/x", "--notify-secret", "s", "--notify-timeout", "x"): (
            "--notify-timeout"
        ),
    }
    for args, says in refused.items():
        port = () if command == "worker" else ("--port", "0")
        code, out = baton(command, str(EXAMPLES), *args, *port, db=tmp_path / "s.db")
        assert code == 2, (args, out)
        assert says in " ".join(out.split()), (args, out)


_ASKING_THE_MANAGER = """
from baton import RequestInput, Workflow


def ask(node_input):
    return RequestInput(
        interrupt_id="approve", message="Refund 40 EUR?", response_schema=bool, assignee="bob"
    )


def done(node_input):
    return f"approved={node_input}"


root_agent = Workflow(name="refunds", edges=[("START", ask, done)])
"""


def test_a_question_for_another_person_waits_for_them(tmp_path: Path) -> None:
    folder = tmp_path / "refunds"
    folder.mkdir()
    (folder / "agent.py").write_text(_ASKING_THE_MANAGER)
    db = tmp_path / "s.db"
    # Ann starts the run at her terminal: it does not ask her, it says whom it waits on.
    _, out = baton("run", str(folder), "go", "--user", "ann", db=db)
    assert "waits on bob" in out, out
    assert "--as bob" in out
    session = re.search(r"session (\S+) waits on", out)
    assert session is not None
    sid = session.group(1)

    code, out = baton("pending", "-p", str(folder), "--assignee", "bob", db=db)
    assert code == 0, out
    assert "approve" in out
    assert "bob" in out
    _, out = baton("pending", "-p", str(folder), "--assignee", "carol", db=db)
    assert "approve" not in out
    _, out = baton("pending", "-p", str(folder), "-u", "bob", db=db)  # bob's inbox
    assert "approve" in out
    code, out = baton("pending", "-p", str(folder), "--assignee", "tab\there", db=db)
    assert code == 1
    assert "control character" in out

    # Carol cannot answer it; nothing changes.
    code, out = baton("resume", sid, "-p", str(folder), "--answer", "true", "--as", "carol", db=db)
    assert code != 0
    assert "assigned to 'bob'" in out
    _, out = baton("pending", "-p", str(folder), "--assignee", "bob", db=db)
    assert "approve" in out

    code, out = baton("resume", sid, "-p", str(folder), "--answer", "true", "--as", "bob", db=db)
    assert code == 0, out
    assert "approved=True" in out


def test_pending_and_sessions_list_a_page_at_a_time(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    made = [session_of(baton("run", APP, f"{n + 1} pens", db=db)[1]) for n in range(3)]
    seen: list[str] = []
    args = ["pending", "-p", str(EXAMPLES), "--limit", "2"]
    while True:
        code, out = baton(*args, db=db)
        assert code == 0, out
        seen += [sid for sid in made if sid[:8] in out]
        more = re.search(r"more: add --cursor (\S+)", out)
        if more is None:
            break
        args = ["pending", "-p", str(EXAMPLES), "--limit", "2", "--cursor", more.group(1)]
    assert seen == made  # oldest first, each once, over two pages
    code, out = baton("sessions", "list", "-p", str(EXAMPLES), "-n", "1", db=db)
    assert code == 0, out
    assert sum(sid[:8] in out for sid in made) == 1
    assert "more: add --cursor" in out


@pytest.mark.parametrize("command", [["pending"], ["sessions", "list"]])
def test_a_bad_page_is_refused_naming_it(command: list[str], tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    code, out = baton(*command, "-p", str(EXAMPLES), "--cursor", "bogus", db=db)
    assert code == 1
    assert "InvalidCursorError" in out
    assert "cursor 'bogus'" in out
    code, out = baton(*command, "-p", str(EXAMPLES), "--limit", "0", db=db)
    assert code == 2
    assert "--limit" in out


# Widens the moment between the prompt appearing and the read starting: input() calls
# PyOS_InputHook right before its read(2), and pause() returns once a signal has landed.
LATE_READ = """import ctypes
hook = ctypes.c_void_p.in_dll(ctypes.pythonapi, "PyOS_InputHook")
hook.value = ctypes.cast(ctypes.CDLL(None).pause, ctypes.c_void_p).value
"""


@pytest.mark.parametrize("moment", ["reading", "before the read starts", "in another thread"])
def test_ctrl_c_at_a_terminal_prompt_stops_at_once_and_says_how_to_resume(
    tmp_path: Path, moment: str
) -> None:
    """At a real terminal (a pty), Ctrl-C at the prompt ends the command without Enter:
    the command's event loop would otherwise only cancel its task once the read returned.
    Also when it lands after the prompt shows and before the read starts (input() then
    read on, waiting for Enter: a CI run, whose test typed it at once), or when the kernel
    hands the SIGINT to another of its threads (aiosqlite's), which interrupts no read."""
    args = [str(BATON), "run", APP, "taxi 12 EUR", "--db", str(tmp_path / "s.db")]
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    if moment == "before the read starts":
        (tmp_path / "sitecustomize.py").write_text(LATE_READ)
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    pid, fd = pty.fork()
    if pid == 0:  # the child: baton, with the pty as its terminal
        os.execve(args[0], args, env)
    seen = read_until(fd, "review_0>")
    if moment == "in another thread":  # kill(2) on a thread's id prefers that thread
        os.kill(
            min(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid), signal.SIGINT
        )
    else:
        os.write(fd, b"\x03")  # Ctrl-C, as typed: the terminal sends SIGINT
    seen += read_until(fd, "baton web")
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 2, seen  # paused
    assert re.search(r"baton resume [0-9a-f-]{36} -p ", seen), seen


def read_until(fd: int, text: str, deadline: float = 60) -> str:
    """What the pty shows until `text` appears (failing when it does not within `deadline`)."""
    seen = ""
    end = time.monotonic() + deadline
    while text not in seen:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        assert ready, f"{text!r} did not appear; the terminal shows:\n{seen}"
        try:
            seen += os.read(fd, 4096).decode(errors="replace")
        except OSError:  # the child closed the terminal
            break
    return seen


async def test_sessions_an_older_baton_stored_under_padded_ids_can_be_shown_and_deleted(
    emptied_store_url: str,
) -> None:
    """An older baton stored session ids starting or ending with a space (refused since
    69baf3c): `baton sessions show|delete` find them under exactly their ids, and a
    padded spelling of another session's id finds nothing (MySQL would take 's1 ' for
    's1' and delete it)."""
    store = SqlStore(emptied_store_url)
    for session in ("s1", " lead", "trail "):
        await store.create_session("expense_approval", "ann", session_id=SessionId(session))
    await store.close()
    where = ("-p", APP, "--db", emptied_store_url)

    for session in (" lead", "trail "):
        code, out = baton("sessions", "show", session, *where)
        assert code == 0, out
        code, out = baton("sessions", "delete", session, *where)
        assert code == 0, out
        assert f"deleted session {session} of expense_approval" in out
    code, out = baton("sessions", "delete", "s1 ", *where)
    assert code == 1
    assert "SessionNotFoundError: no session 's1 '" in out

    store = SqlStore(emptied_store_url)
    left = await store.list_sessions("expense_approval")
    await store.close()
    assert [s.id for s in left] == ["s1"]
