"""The names users import."""

from __future__ import annotations

import baton


def _isort_style(name: str) -> tuple[int, str]:
    # The order ruff's RUF022 keeps: CONSTANTS, then Classes, then functions and modules.
    group = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return group, name


def test_all_is_sorted_and_complete() -> None:
    names = baton.__all__
    assert list(names) == sorted(names, key=_isort_style)
    for name in names:
        assert hasattr(baton, name), name


# Every name DESIGN §1 says the seed documents import from the top-level package.
SEED_NAMES = [
    "App", "ResumabilityConfig", "Runner", "InMemoryRunner",
    "Workflow", "FunctionNode", "node", "JoinNode", "Edge", "START", "DEFAULT_ROUTE", "RetryConfig",
    "Context", "InvocationContext", "Event", "EventActions", "RequestInput",
    "InMemorySessionService", "SqliteSessionService", "DatabaseSessionService",
]  # fmt: skip


def test_seed_names_are_importable() -> None:
    missing = [name for name in SEED_NAMES if name not in baton.__all__]
    assert missing == []
    for name in ("Content", "Part", "FunctionCall", "FunctionResponse"):
        assert hasattr(baton.types, name)
