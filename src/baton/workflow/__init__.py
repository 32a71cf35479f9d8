"""Workflow graphs: nodes, edges, and the scheduler that runs them."""

from baton.errors import NodeTimeoutError
from baton.workflow.graph import DEFAULT_ROUTE, Edge
from baton.workflow.node_runner import NodeRunner
from baton.workflow.nodes import START, BaseNode, FunctionNode, JoinNode, RetryConfig
from baton.workflow.scheduler import Workflow
from baton.workflow.workers import Node, node

__all__ = [
    "DEFAULT_ROUTE",
    "START",
    "BaseNode",
    "Edge",
    "FunctionNode",
    "JoinNode",
    "Node",
    "NodeRunner",
    "NodeTimeoutError",
    "RetryConfig",
    "Workflow",
    "node",
]
