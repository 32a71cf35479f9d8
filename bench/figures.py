"""How every benchmark script reports a figure: one JSON object per line on stdout.

Standard library only: the peer scripts import it from bench/.venv too.
"""

from __future__ import annotations

import json


def emit(
    system: str,
    workload: str,
    backend: str,
    value: float | None,
    unit: str,
    note: str = "",
    **extra: float,
) -> None:
    """Print one figure (`value` None when it could not be measured; `note` says why).

    `extra` adds named numbers to it (e.g. `max`, `ttl`, `target` of a recovery figure).
    """
    figure = {
        "system": system,
        "workload": workload,
        "backend": backend,
        "value": value,
        "unit": unit,
        "note": note,
        **extra,
    }
    print(json.dumps(figure), flush=True)
