"""Tables of the benchmark figures, printed and written to bench/results.md.

    python bench/report.py RESULTS_DIR [--write bench/results.md]

RESULTS_DIR holds `<system>.jsonl` files (one JSON figure per line, from
baton_bench.py and peers/*_bench.py) and, for a peer that failed, `<system>.err`;
`recovery.jsonl` (from recovery_bench.py), `postgres.jsonl` (postgres_bench.py),
`http.jsonl` (http_bench.py) and `paging.jsonl` (paging_bench.py).
A ratio is the peer's figure divided by baton's: 10x means the peer took ten times as
long (in the PostgreSQL table, baton's figure divided by its floor's).

bench/results.md has a section per table; `--write` replaces the sections it has
figures for and keeps the others, so one benchmark can be run again on its own.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
from dataclasses import dataclass
from pathlib import Path

SYSTEMS = ("baton", "adk", "langgraph")
RECOVERY = "recovery"  # recovery.jsonl: baton's recovery and deadline figures
RECOVERY_WORKLOADS = (
    "recovery/dead-holder",
    "recovery/restarted-holder",
    "deadline/same-process",
    "deadline/other-process",
)
POSTGRES = "postgres"  # postgres.jsonl: baton on PostgreSQL against its raw asyncpg floors
HTTP = "http"  # http.jsonl: HITL runs over HTTP against `baton api_server` processes
PAGING = "paging"  # paging.jsonl: pages of pending questions in a big database
PAGED = ("pending", "sessions")  # what paging_bench.py lists a page at a time
PAGES = ("first page", "middle page", "last page")
POSTGRES_ROWS = (  # workload, what it is, its floor's workload, what the floor is
    ("pg/chain", "chain step (µs)", "pg/raw-step", "one-statement asyncpg step"),
    ("pg/step-statement", "step statement alone (µs)", "pg/raw-step", "one-statement asyncpg step"),
    ("pg/chain-cpu", "client CPU a step (µs)", "pg/raw-step-cpu", "one-statement asyncpg step"),
    (
        "pg/raw-step+cpu",
        "floor step after burning baton's extra client CPU (µs)",
        "pg/raw-step",
        "one-statement asyncpg step",
    ),
    ("pg/chain-beyond-cpu", "chain step (µs)", "pg/raw-step+cpu", "floor step + baton's CPU"),
    ("pg/resume", "resume (ms)", "pg/raw-txn3", "3-statement asyncpg transaction"),
    ("pg/resume-durable", "resume (ms)", "pg/raw-resume", "read + 2 durable 1-statement steps"),
    ("pg/resume-round-trips", "resume round trips", "", ""),
    ("pg/resume-announcements", "NOTIFYs sent meanwhile, in the background", "", ""),
    ("pg/bytes-per-step", "bytes stored per step", "", ""),
)
TTL_BOUND = ("recovery/dead-holder",)  # figures whose target is the lease TTL + 1 s
BACKENDS = ("memory", "sqlite", "postgres")
TARGETS = {
    # The engine's own cost per node; a plain node's target is this plus a thread hop
    # (baton_bench.py emits it with the chain figure, measured in the same run).
    ("chain-async", "memory"): 30.0,
    ("chain-async", "sqlite"): 100.0,
    **{(f"resume@{h}", "sqlite"): 3.0 for h in (0, 1_000, 10_000, 100_000)},
}


@dataclass(frozen=True)
class Figure:
    system: str
    workload: str
    backend: str
    value: float | None
    unit: str
    note: str
    max: float | None = None  # recovery figures: the worst repetition
    ttl: float | None = None  # the lease time to live the figure was measured with
    target: float | None = None
    at_least: float | None = None  # a target the figure must reach (runs/s, a ratio)
    best: float | None = None  # paging figures: the quickest of the reads


def load(folder: Path) -> tuple[list[Figure], dict[str, str]]:
    """Every figure in the folder, and why a system produced none (its stderr's tail)."""
    figures: list[Figure] = []
    problems: dict[str, str] = {}
    for system in (*SYSTEMS, RECOVERY, POSTGRES, HTTP, PAGING):
        path = folder / f"{system}.jsonl"
        found = 0
        lines = path.read_text().splitlines() if path.exists() else []
        for line in lines:
            if line.startswith("{"):
                raw = json.loads(line)
                value = raw["value"]
                figures.append(
                    Figure(
                        system=str(raw["system"]),
                        workload=str(raw["workload"]),
                        backend=str(raw["backend"]),
                        value=None if value is None else float(value),
                        unit=str(raw["unit"]),
                        note=str(raw.get("note", "")),
                        max=_number(raw.get("max")),
                        ttl=_number(raw.get("ttl")),
                        target=_number(raw.get("target")),
                        at_least=_number(raw.get("at_least")),
                        best=_number(raw.get("best")),
                    )
                )
                found += 1
        errors = folder / f"{system}.err"
        if not found and (system not in (RECOVERY, POSTGRES, HTTP, PAGING) or path.exists()):
            tail = errors.read_text().strip().splitlines()[-1:] if errors.exists() else []
            problems[system] = tail[0] if tail else "no figures produced"
    return figures, problems


def _number(value: object) -> float | None:
    return None if value is None else float(str(value))


def cell(figure: Figure | None) -> str:
    if figure is None:
        return "-"
    if figure.value is None:
        return f"n/a ({figure.note})" if figure.note else "n/a"
    return f"{figure.value:,.0f}" if figure.value >= 100 else f"{figure.value:,.2f}"


def ratio(peer: Figure | None, baton: Figure | None) -> str:
    if peer is None or baton is None or peer.value is None or not baton.value:
        return "-"
    return f"{peer.value / baton.value:,.1f}x"


def verdict(baton: Figure | None) -> str:
    if baton is None or baton.value is None:
        return ""
    target = TARGETS.get((baton.workload, baton.backend), baton.target)
    if target is None:
        return ""
    shown = f"{target:.1f}" if target < 100 else f"{target:,.0f}"
    return f"{'met' if baton.value <= target else 'MISSED'} (≤ {shown})"


def table(figures: list[Figure]) -> list[str]:
    index = {(f.system, f.workload, f.backend): f for f in figures}
    workloads = sorted(
        {
            f.workload
            for f in figures
            if f.workload not in RECOVERY_WORKLOADS
            and not f.workload.startswith(("pg/", "http/", *PAGED, "paging bench"))
        },
        key=_workload_order,
    )
    if not workloads:
        return []
    header = "| workload | backend | unit | baton | target | google-adk | adk/baton |"
    header += " langgraph | langgraph/baton |"
    rows = [header, "|" + "---|" * 9]
    for name in workloads:
        for backend in BACKENDS:
            baton = index.get(("baton", name, backend))
            adk = index.get(("adk", name, backend))
            graph = index.get(("langgraph", name, backend))
            unit = next((f.unit for f in (baton, adk, graph) if f is not None), "")
            rows.append(
                f"| {name} | {backend} | {unit} | {cell(baton)} | {verdict(baton)} | {cell(adk)} "
                f"| {ratio(adk, baton)} | {cell(graph)} | {ratio(graph, baton)} |"
            )
    return rows


def recovery_table(figures: list[Figure]) -> list[str]:
    """Seconds per recovery figure, with the lease TTL it ran under and its target;
    a target is met when the worst repetition meets it."""
    index = {(f.workload, f.backend): f for f in figures if f.system == "baton"}
    rows = [
        "| figure | backend | lease TTL (s) | median (s) | max (s) | median / TTL | target (s) "
        "| verdict |",
        "|" + "---|" * 8,
    ]
    for workload in RECOVERY_WORKLOADS:
        for backend in ("sqlite", "postgres"):
            figure = index.get((workload, backend))
            if figure is not None:
                rows.append(_recovery_row(figure))
    return rows if len(rows) > 2 else []


def postgres_table(figures: list[Figure]) -> list[str]:
    """baton on PostgreSQL, each figure with its raw asyncpg floor from the same run,
    the ratio and the target (a ratio to the floor, or an absolute bound)."""
    index = {f.workload: f for f in figures if f.workload.startswith("pg/")}
    rows = [
        "| figure | baton | floor | floor figure | baton / floor | target | verdict |",
        "|" + "---|" * 7,
    ]
    for workload, label, floor_workload, floor_label in POSTGRES_ROWS:
        figure = index.get(workload)
        if figure is not None:
            rows.append(_postgres_row(figure, label, index.get(floor_workload), floor_label))
    return rows if len(rows) > 2 else []


def http_table(figures: list[Figure]) -> list[str]:
    """The HTTP figures as measured (in the order measured), each with its target and,
    where the script gave one, the ratio or load average it was measured under."""
    rows = ["| figure | backend | value | unit | target | verdict | measured with |"]
    rows.append("|" + "---|" * 7)
    for figure in figures:
        if not figure.workload.startswith("http/"):
            continue
        target, verdict = _http_target(figure)
        rows.append(
            f"| {figure.workload.removeprefix('http/')} | {figure.backend} | {cell(figure)} "
            f"| {figure.unit} | {target} | {verdict} | {figure.note.split('; ')[0]} |"
        )
    return rows if len(rows) > 2 else []


def paging_table(figures: list[Figure]) -> list[str]:
    """Each page's median and best read beside the whole list it replaces (pending
    questions, sessions), read in the same run on the same database."""
    listed = {
        (f.workload.split(",")[0], f.backend): f for f in figures if f.workload.startswith(PAGED)
    }
    rows = [
        "| figure | backend | median (ms) | best (ms) | whole list (ms) | target (ms) | verdict "
        "| measured with |",
        "|" + "---|" * 8,
    ]
    for backend in ("sqlite", "postgres"):
        for kind in PAGED:
            whole = listed.get((f"{kind} whole list (before)", backend))
            for page in PAGES:
                figure = listed.get((f"{kind} {page}", backend))
                if figure is None or figure.value is None:
                    continue
                target = figure.target
                wanted = "" if target is None else f"≤ {target:g}"
                verdict = "" if target is None else ("met" if figure.value <= target else "MISSED")
                rows.append(
                    f"| {figure.workload} | {backend} | {cell(figure)} | {figure.best or '-'} "
                    f"| {cell(whole)} | {wanted} | {verdict} | {figure.note.split('; ')[-1]} |"
                )
    return rows if len(rows) > 2 else []


def _http_target(figure: Figure) -> tuple[str, str]:
    if figure.value is None:
        return "", ""
    if figure.at_least is not None:
        return f"≥ {figure.at_least:g}", "met" if figure.value >= figure.at_least else "MISSED"
    if figure.target is not None:
        return f"≤ {figure.target:g}", "met" if figure.value <= figure.target else "MISSED"
    return "", ""


def _postgres_row(figure: Figure, label: str, floor: Figure | None, floor_label: str) -> str:
    if figure.value is None:
        return f"| {label} | {cell(figure)} | {floor_label} | - | - | - | - |"
    measured = figure.value
    target = figure.target
    if floor is not None and floor.value:
        measured = figure.value / floor.value
        wanted = f"≤ {target:g}x" if target is not None else ""
        shown = f"{measured:.2f}x"
    else:
        wanted = f"≤ {target:g}" if target is not None else ""
        shown = "-"
    verdict = "" if target is None else ("met" if measured <= target else "MISSED")
    return (
        f"| {label} | {cell(figure)} | {floor_label} | {cell(floor)} | {shown} | {wanted} "
        f"| {verdict} |"
    )


def _recovery_row(figure: Figure) -> str:
    ttl = figure.ttl or 0.0
    target = f"{figure.target:g}" if figure.target is not None else ""
    if figure.value is None or figure.max is None:
        cells = [f"n/a ({figure.note})", "-", "-", "-"]
    else:
        met = figure.target is None or figure.max <= figure.target
        cells = [
            f"{figure.value:.3f}",
            f"{figure.max:.3f}",
            f"{figure.value / ttl:.2f}" if ttl and figure.workload in TTL_BOUND else "-",
            "met" if met else "MISSED",
        ]
    value, worst, ratio, verdict = cells
    return (
        f"| {figure.workload} | {figure.backend} | {ttl:g} | {value} | {worst} | {ratio} "
        f"| {target} | {verdict} |"
    )


_FIRST = ("chain", "chain-async", "thread-hop")


def _workload_order(workload: str) -> tuple[int, int]:
    """The chains and their floor first, then resume@H by H, then the rest by name."""
    if workload in _FIRST:
        return (0, _FIRST.index(workload))
    _, _, size = workload.partition("@")
    return (1, int(size)) if size.isdigit() else (2, 0)


def machine() -> str:
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, load average at report time {load}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--write", type=Path)
    args = parser.parse_args()
    figures, problems = load(args.folder)
    lines = table(figures)
    recovery = recovery_table(figures)
    postgres = postgres_table(figures)
    http = http_table(figures)
    paging = paging_table(figures)
    notes = [f"- {system}: no figures: {why}" for system, why in problems.items()]
    notes = notes if lines or RECOVERY in problems else []
    print("\n".join([*lines, *notes, "", *recovery, "", *postgres, "", *http, "", *paging]))
    if args.write:
        when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        sections = read_sections(args.write)
        if lines:
            measured = f"Measured {when} by `make bench` on {machine()}."
            sections[SPEED] = [measured, *SPEED_TEXT, "", *lines, *notes]
        if recovery:
            measured = f"Measured {when} by `bench/recovery_bench.py` on {machine()}."
            sections[RECOVERY_HEADING] = [measured, *RECOVERY_TEXT, "", *recovery]
        if postgres:
            measured = f"Measured {when} by `bench/postgres_bench.py` on {machine()}."
            sections[POSTGRES_HEADING] = [measured, *POSTGRES_TEXT, "", *postgres]
        if http:
            measured = f"Measured {when} by `bench/http_bench.py` on {machine()}."
            sections[HTTP_HEADING] = [measured, *HTTP_TEXT, "", *http]
        if paging:
            measured = f"Measured {when} by `bench/paging_bench.py` on {machine()}."
            sections[PAGING_HEADING] = [measured, *PAGING_TEXT, "", *paging]
        write_sections(args.write, sections)


SPEED = "Speed"
SPEED_TEXT = [
    "Chain: median µs per node of a 100-node run; resume@H: median ms of the call",
    "that answers a paused run in a session holding H earlier events (LangGraph:",
    "H earlier checkpoints in the thread). Ratios are peer / baton.",
]
POSTGRES_HEADING = "PostgreSQL against its floor"
POSTGRES_TEXT = [
    "One run, rounds interleaved: baton's 100-node async chain (µs per node) against one",
    "step written by hand as ONE prepared asyncpg statement; the call answering a paused",
    "`START -> a -> ask -> b` run (ms) against a hand-written 3-statement asyncpg",
    "transaction; the statements (plus BEGIN/COMMIT of explicit transactions) baton sends",
    "during that call (apart: the NOTIFYs a background task sends meanwhile to wake other",
    "processes); and the growth of baton's tables per chain step",
    "(`pg_total_relation_size` after VACUUM, a database of its own). Durable commits.",
]
HTTP_HEADING = "HITL runs over HTTP"
HTTP_TEXT = [
    "16 clients each repeat create session + `POST /run` (the run asks and pauses) +",
    "answer (the run finishes) against 1 and 2 `baton api_server` processes on loopback,",
    "requests in turn. The clients are a load generator process of their own",
    "(`bench/http_load.c`, built with the machine's C compiler, else `http_load.py`:",
    "keep-alive HTTP/1.1, every response checked), a few hundredths of the servers' CPU",
    "per request, so the servers are what is measured. CPU per request is user + system",
    "time over the requests served: of the servers, of the load generator, and on",
    "PostgreSQL of the database (the backends serving the servers' connections and its",
    "own processes: WAL writer, checkpointer ...); 'measured with' gives the cores each",
    "part kept busy and what other processes used meanwhile. The servers' CPU is also",
    "set beside the same runs through the library in the bench's own process (the floor,",
    "measured in the same run); on a shared machine the absolute figures move with the",
    "load, the ratios much less.",
]
PAGING_HEADING = "Listings a page at a time"
PAGING_TEXT = [
    "A database built as a busy deployment looks: 1,000 sessions of one user with 10 runs",
    "each, every run waiting on a question (10,000 open questions, as many of other users),",
    "1,000 events per session (1,000,000 events). Reads through `baton.listings.pending_page`",
    "(what the Runner, the server and the CLI call) of the first page, the page after the",
    "5,000th question and the last page, 100 questions each, beside reading the user's whole",
    "pending list (what the listing did before pages); the same for the user's 1,000",
    "sessions (`sessions_page`: the first page and the page after the 500th). Median and",
    "best of 20 reads (5 with --quick, which builds a tenth of the database).",
]
RECOVERY_HEADING = "Recovery and deadlines"
RECOVERY_TEXT = [
    "Real processes on one machine, 5 repetitions each (3 with --quick), seconds.",
    "dead-holder: from",
    "SIGKILL of the process holding a run to the run's next commit by an idle `baton",
    "worker` with another --worker-id (target: lease TTL + 1 s). restarted-holder: from",
    "the ready line of a `baton worker` started with the killed process's --worker-id",
    "(read through a pipe, a few ms late: a commit can precede it) to the run's next",
    "commit. deadline: answered_at - expires_at of questions with `timeout=2`, the",
    "worker in the process that asked or in another one. A verdict judges the max.",
]


def read_sections(path: Path) -> dict[str, list[str]]:
    """The `## ` sections of an existing results file, by heading (in order)."""
    sections: dict[str, list[str]] = {}
    if not path.exists():
        return sections
    current: list[str] | None = None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), [])
        elif current is not None:
            current.append(line)
    return {heading: _trimmed(body) for heading, body in sections.items()}


def _trimmed(lines: list[str]) -> list[str]:
    text = "\n".join(lines).strip("\n")
    return text.splitlines() if text else []


def write_sections(path: Path, sections: dict[str, list[str]]) -> None:
    order = [SPEED, RECOVERY_HEADING, *(h for h in sections if h not in (SPEED, RECOVERY_HEADING))]
    text = ["# Benchmark results", ""]
    for heading in order:
        if heading in sections:
            text += [f"## {heading}", "", *sections[heading], ""]
    path.write_text("\n".join(text))


if __name__ == "__main__":
    main()
