"""The PostgreSQL server's time in each statement of a resume (postgres_bench's
pg/resume: the `run_async` call answering a paused `START -> a -> ask -> b` run).

    .venv/bin/python bench/resume_explain.py [--runs N] [--repeats N] [--plans]

Answers `--runs` paused runs. Before each statement the answering call sends, the
same statement with the same arguments runs `--repeats` times under
EXPLAIN (ANALYZE, BUFFERS) on a connection of its own, each in a transaction rolled
back, from the state the real statement then meets (its generic plan, as baton's own
connections run it: `plan_cache_mode = force_generic_plan`). Prints, per statement
of the call, the fewest milliseconds of execution (and of planning) over all those
runs: server time that holds under load better than a median does. `--plans` prints
the last plan of each.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Mapping
from typing import Any

import asyncpg  # pyright: ignore[reportMissingTypeStubs]
from baton_bench import (
    answer_message,
    drain,
    open_service,
    resume_workflow,
    runner_for,
    text_message,
)

from baton.sessions.sql.direct import Statement, plan_for
from baton.sessions.sql.postgres import DirectConnections, asyncpg_connect_args


class Explainer:
    """Runs each statement a resume sends under EXPLAIN ANALYZE before it goes."""

    def __init__(self, connection: Any, dialect: Any, repeats: int) -> None:
        self._connection = connection
        self._dialect = dialect
        self._repeats = repeats
        self.calls: list[list[tuple[str, float, float, str]]] = []  # per call: its statements

    async def explain(self, statement: Statement, params: Mapping[str, Any]) -> None:
        plan = plan_for(statement, tuple(params), self._dialect, convert_results=False)
        if "pg_notify" in plan.sql:
            return  # an announcement, sent beside the call (see postgres_bench's pg/resume)
        arguments = plan.arguments(params)
        best_run = best_plan = float("inf")
        text = ""
        name = f"s{abs(hash(plan.sql))}"
        prepared = await self._connection.fetchval(
            "SELECT count(*) FROM pg_prepared_statements WHERE name = $1", name
        )
        if not prepared:
            await self._connection.execute(f"PREPARE {name} AS {plan.sql}")
        values = ", ".join(_literal(a) for a in arguments)
        for _ in range(self._repeats):
            await self._connection.execute("BEGIN")
            try:
                rows = await self._connection.fetch(
                    f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE {name}({values})"
                )
            finally:
                await self._connection.execute("ROLLBACK")
            lines = [row[0] for row in rows]
            best_run = min(best_run, _ms(lines, "Execution Time: "))
            best_plan = min(best_plan, _ms(lines, "Planning Time: "))
            text = "\n".join(lines)
        self.calls[-1].append((plan.sql, best_run, best_plan, text))


def _ms(lines: list[str], label: str) -> float:
    """The milliseconds EXPLAIN ANALYZE's line starting with `label` gives (0 without one)."""
    for line in lines:
        if line.startswith(label):
            return float(line[len(label) :].split()[0])
    return 0.0


def _literal(value: Any) -> str:
    """`value` written in SQL, for EXECUTE's arguments (which a prepared EXPLAIN cannot bind)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, bytes):
        return "'\\x" + value.hex() + "'"
    if isinstance(value, list):
        return "ARRAY[" + ", ".join(_literal(v) for v in value) + "]"
    text = value if isinstance(value, str) else str(value)
    return "'" + text.replace("'", "''") + "'"


async def measure(runs: int, repeats: int, plans: bool) -> None:
    async with open_service("postgres") as service:
        runner = runner_for(resume_workflow(), service)
        store: Any = service.store  # pyright: ignore[reportAttributeAccessIssue]
        direct: DirectConnections = store._executor._direct
        url = store._dialect.url
        args = asyncpg_connect_args(url)
        args["server_settings"] = {
            **args.get("server_settings", {}),
            "plan_cache_mode": "force_generic_plan",
        }
        connection = await asyncpg.connect(**args)  # pyright: ignore[reportUnknownMemberType]
        explainer = Explainer(connection, direct._dialect, repeats)  # pyright: ignore[reportPrivateUsage]
        sessions: list[str] = []
        for _ in range(runs + 1):
            session = await service.create_session(app_name="bench", user_id="u")
            await drain(runner, session.id, text_message("go"))
            sessions.append(session.id)
        await drain(runner, sessions[0], answer_message())  # warm-up: prepares everything
        fetch = direct.fetch

        one_at_a_time = asyncio.Lock()  # the explaining connection runs one statement

        async def explained(statement: Statement, params: Mapping[str, Any]) -> Any:
            async with one_at_a_time:
                await explainer.explain(statement, params)
            return await fetch(statement, params)

        direct.fetch = explained  # type: ignore[method-assign]
        try:
            for session_id in sessions[1:]:
                explainer.calls.append([])
                await drain(runner, session_id, answer_message())
        finally:
            direct.fetch = fetch  # type: ignore[method-assign]
            await connection.close()
    shapes = {len(call) for call in explainer.calls}
    assert len(shapes) == 1, f"calls sent different numbers of statements: {shapes}"
    for i in range(shapes.pop()):
        found = [call[i] for call in explainer.calls]
        run = min(f[1] for f in found) * 1e3
        planned = min(f[2] for f in found) * 1e3
        start = " ".join(found[0][0].split()[:3])
        print(f"statement {i + 1}: execution {run:.0f} µs, planning {planned:.0f} µs ({start} ...)")
        if plans:
            print(found[-1][3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3, help="answered runs (after 1 warm-up)")
    parser.add_argument(
        "--repeats", type=int, default=15, help="EXPLAIN ANALYZE runs per statement"
    )
    parser.add_argument("--plans", action="store_true", help="print each statement's plan")
    args = parser.parse_args()
    asyncio.run(measure(args.runs, args.repeats, args.plans))


if __name__ == "__main__":
    main()
