"""The names users import."""

from __future__ import annotations

import importlib

import pytest

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


# The reference's names, by the module its users import them from, and baton's module
# for it (README "Imports from the reference"). Names left out are listed in the README.
REFERENCE_NAMES = {
    "baton": [  # google.adk.workflow
        "BaseNode", "DEFAULT_ROUTE", "Edge", "FunctionNode", "JoinNode", "Node",
        "NodeTimeoutError", "RetryConfig", "START", "Workflow", "node",
    ],
    "baton.workflow": [
        "BaseNode", "DEFAULT_ROUTE", "Edge", "FunctionNode", "JoinNode", "Node",
        "NodeTimeoutError", "RetryConfig", "START", "Workflow", "node",
    ],
    "baton.workflow.node_runner": ["NodeRunner"],  # google.adk.workflow._node_runner
    "baton.agents": [
        "Agent", "BaseAgent", "Context", "InvocationContext", "LlmAgent", "LoopAgent",
        "ParallelAgent", "RunConfig", "SequentialAgent",
    ],
    "baton.sessions": [
        "BaseSessionService", "DatabaseSessionService", "InMemorySessionService", "Session",
        "State", "StateSchemaError",
    ],
    "baton.tools": [
        "AgentTool", "BaseTool", "FunctionTool", "LongRunningFunctionTool", "McpToolset",
        "MCPToolset", "ToolContext", "TransferToAgentTool", "enterprise_web_search",
        "exit_loop", "get_user_choice", "google_search", "load_artifacts", "load_memory",
        "preload_memory", "transfer_to_agent", "url_context",
    ],
    "baton.memory": ["BaseMemoryService", "InMemoryMemoryService", "SqliteMemoryService"],
    "baton.errors": ["StaleSessionError", "InvocationNotFoundError", "SessionNotFoundError"],
}  # fmt: skip


def test_the_references_names_import_from_batons_module_for_them() -> None:
    missing = [
        f"{module}.{name}"
        for module, names in REFERENCE_NAMES.items()
        for name in names
        if not hasattr(importlib.import_module(module), name)
    ]
    assert missing == []


def test_the_references_session_names_are_batons_own() -> None:
    from baton.sessions import InMemorySessionService, Session, State
    from baton.sessions.store import Session as StoredSession
    from baton.tools import ToolState

    assert InMemorySessionService is baton.InMemorySessionService
    assert Session is StoredSession
    assert (State.APP_PREFIX, State.USER_PREFIX, State.TEMP_PREFIX) == ("app:", "user:", "temp:")
    written = ToolState({"a": 1}, {})
    assert written.TEMP_PREFIX == "temp:"
    assert not written.has_delta()
    written[f"{State.TEMP_PREFIX}seen"] = True
    assert written.has_delta()
    with pytest.raises(AttributeError, match="module 'baton.sessions' has no attribute 'Nope'"):
        importlib.import_module("baton.sessions").Nope  # noqa: B018 -- the lookup is the point


@pytest.mark.parametrize("module", ["baton.sessions", "baton.memory"])
def test_the_references_names_are_plain_imports_type_checkers_see(module: str) -> None:
    # A module-level __getattr__ hands its names to type checkers as Any.
    imported = importlib.import_module(module)
    assert "__getattr__" not in vars(imported)
    assert sorted(imported.__all__) == imported.__all__
    assert all(name in vars(imported) for name in imported.__all__)
