"""Side-by-side table of the benchmark figures, printed and written to bench/results.md.

    python bench/report.py RESULTS_DIR [--write bench/results.md]

RESULTS_DIR holds `<system>.jsonl` files (one JSON figure per line, from
baton_bench.py and peers/*_bench.py) and, for a peer that failed, `<system>.err`.
A ratio is the peer's figure divided by baton's: 10x means the peer took ten times
as long.
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
BACKENDS = ("memory", "sqlite", "postgres")
TARGETS = {
    ("chain", "memory"): 30.0,
    ("chain", "sqlite"): 100.0,
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


def load(folder: Path) -> tuple[list[Figure], dict[str, str]]:
    """Every figure in the folder, and why a system produced none (its stderr's tail)."""
    figures: list[Figure] = []
    problems: dict[str, str] = {}
    for system in SYSTEMS:
        path = folder / f"{system}.jsonl"
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
                    )
                )
        errors = folder / f"{system}.err"
        if not any(f.system == system for f in figures):
            tail = errors.read_text().strip().splitlines()[-1:] if errors.exists() else []
            problems[system] = tail[0] if tail else "no figures produced"
    return figures, problems


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
    target = TARGETS.get((baton.workload, baton.backend))
    if target is None:
        return ""
    return f"{'met' if baton.value <= target else 'MISSED'} (≤ {target:g})"


def table(figures: list[Figure]) -> list[str]:
    index = {(f.system, f.workload, f.backend): f for f in figures}
    workloads = sorted({f.workload for f in figures}, key=_workload_order)
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


def _workload_order(workload: str) -> tuple[int, int]:
    """chain first, then resume@H by H."""
    _, _, size = workload.partition("@")
    return (0, 0) if not size else (1, int(size))


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
    notes = [f"- {system}: no figures: {why}" for system, why in problems.items()]
    print("\n".join(lines + notes))
    if args.write:
        when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
        text = [
            "# Benchmark results",
            "",
            f"Measured {when} by `make bench` on {machine()}.",
            "Chain: median µs per node of a 100-node run; resume@H: median ms of the call",
            "that answers a paused run in a session holding H earlier events (LangGraph:",
            "H earlier checkpoints in the thread). Ratios are peer / baton.",
            "",
            *lines,
            *notes,
            "",
        ]
        Path(args.write).write_text("\n".join(text))


if __name__ == "__main__":
    main()
