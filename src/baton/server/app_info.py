"""`GET /apps/{app_name}/app-info`: an app's LlmAgent tree as the reference's server
describes it (name, root agent, description, and each agent's instruction, tools and
sub-agents by name), so a client written for that route reads baton's the same way."""

from __future__ import annotations

from typing import Final, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, JsonValue

from baton.agents.llm_agent import LlmAgent
from baton.errors import AppInfoUnavailableError
from baton.server.catalog import AppCatalog
from baton.server.refusals import ERROR_RESPONSES
from baton.server.security import ApiKeys
from baton.tools.base import BaseTool
from baton.tools.base_toolset import BaseToolset
from baton.types import FunctionDeclaration, WireModel

__all__ = ["AgentInfo", "AppInfo", "app_info_routes", "describe_agents"]


class AgentInfo(BaseModel):
    """One agent of the tree. snake_case keys, as the reference's (a plain pydantic model
    there, where the app's own fields are camelCase)."""

    name: str
    description: str
    instruction: str
    tools: list[dict[str, JsonValue]]
    sub_agents: list[str]


class AppInfo(WireModel):
    """The route's reply."""

    name: str
    root_agent_name: str
    description: str
    language: Literal["python"] = "python"
    is_computer_use: bool = False  # the reference's field; baton has no computer-use agents
    agents: dict[str, AgentInfo]


_PROVIDED: Final = "<InstructionProvider: {}>"


async def describe_agents(root: LlmAgent) -> dict[str, AgentInfo]:
    """Each LlmAgent of the tree below `root` (sub-agents of other kinds are left out, as
    the reference leaves them), by name, sub-agents before their parent."""
    agents: dict[str, AgentInfo] = {}

    async def visit(agent: LlmAgent) -> None:
        if agent.name in agents:
            return
        subs = [s for s in agent.sub_agents if isinstance(s, LlmAgent)]
        for sub in subs:
            await visit(sub)
        agents[agent.name] = AgentInfo(
            name=agent.name,
            description=agent.description,
            instruction=_instruction_text(agent),
            tools=[
                _as_tool(declared)
                for tool in await _own_tools(agent)
                if (declared := tool.declaration()) is not None
            ],
            sub_agents=[s.name for s in subs],
        )

    await visit(root)
    return agents


def _instruction_text(agent: LlmAgent) -> str:
    """A provider is named, not called: it may need a run's state."""
    instruction = agent.instruction
    if isinstance(instruction, str):
        return instruction
    return _PROVIDED.format(getattr(instruction, "__name__", type(instruction).__name__))


async def _own_tools(agent: LlmAgent) -> list[BaseTool]:
    """The agent's `tools`, a toolset's listed outside any run; not `transfer_to_agent`."""
    own = iter(agent.tools_by_name.values())  # begins with `tools`' own, in their order
    tools: list[BaseTool] = []
    for item in agent.tools:
        if isinstance(item, BaseToolset):
            tools.extend(await item.get_tools())
        else:
            tools.append(next(own))
    return tools


def _as_tool(declaration: FunctionDeclaration) -> dict[str, JsonValue]:
    """A declaration as the reference's `types.Tool` JSON: its parameters as JSON Schema
    under `parametersJsonSchema` (what baton's `parameters` hold)."""
    fields = declaration.to_wire()
    if "parameters" in fields:
        fields["parametersJsonSchema"] = fields.pop("parameters")
    return {"functionDeclarations": [fields]}


def app_info_routes(catalog: AppCatalog, keys: ApiKeys) -> APIRouter:
    """The route, for `catalog`'s apps."""
    router = APIRouter(responses=ERROR_RESPONSES)

    @router.get("/apps/{app_name}/app-info", response_model=AppInfo)
    async def app_info(request: Request, app_name: str) -> AppInfo:  # pyright: ignore[reportUnusedFunction] -- a route
        keys.authorize(request, None)
        runner = catalog.runner(app_name)
        root = runner.root
        if not isinstance(root, LlmAgent):
            raise AppInfoUnavailableError(
                f"app '{app_name}' has a root '{root.name}' of type {type(root).__name__}, "
                "not an LlmAgent; app-info describes LlmAgent trees only (as the reference's "
                "does): see GET /dev/apps/{app_name}/build_graph for any app's graph."
            )
        return AppInfo(
            name=app_name,
            root_agent_name=root.name,
            description=root.description,
            agents=await describe_agents(root),
        )

    return router
