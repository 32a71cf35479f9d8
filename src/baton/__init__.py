"""baton: durable, resumable agent workflows with human-in-the-loop."""

from baton import types
from baton.context import Context, InvocationContext
from baton.events import Event, EventActions, RequestInput
from baton.runner import App, InMemoryRunner, ResumabilityConfig, Runner
from baton.sessions.services import InMemorySessionService
from baton.workflow import (
    DEFAULT_ROUTE,
    START,
    BaseNode,
    Edge,
    FunctionNode,
    JoinNode,
    RetryConfig,
    Workflow,
    node,
)

__all__ = [
    "DEFAULT_ROUTE",
    "START",
    "App",
    "BaseNode",
    "Context",
    "Edge",
    "Event",
    "EventActions",
    "FunctionNode",
    "InMemoryRunner",
    "InMemorySessionService",
    "InvocationContext",
    "JoinNode",
    "RequestInput",
    "ResumabilityConfig",
    "RetryConfig",
    "Runner",
    "Workflow",
    "node",
    "types",
]
