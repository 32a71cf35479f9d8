"""A tool the model calls with names of things whose contents then go in its next
request, not in the session (`load_artifacts`, `load_mcp_resource`)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import JsonValue

from baton.models.llm import FunctionDeclaration, LlmRequest
from baton.tools.base import BaseTool
from baton.tools.tool_context import ToolContext

__all__ = ["LoadIntoNextRequestTool"]


class LoadIntoNextRequestTool(BaseTool):
    """Declares one argument, a list of names under `names_key`, and answers a call with
    the names and `status`; `requested` gives a subclass's `process_llm_request` the
    names the model's last call asked for.

    Args:
        name: the tool's name.
        description: what the model is told it does.
        names_key: the argument holding the names.
        status: the call's answer beside the names.
    """

    def __init__(self, *, name: str, description: str, names_key: str, status: str) -> None:
        super().__init__(name=name, description=description)
        self._names_key = names_key
        self._status = status

    def declaration(self) -> FunctionDeclaration:
        names: JsonValue = {"type": "array", "items": {"type": "string"}}
        return FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters={"type": "object", "properties": {self._names_key: names}},
        )

    async def run(self, args: dict[str, JsonValue], tool_context: ToolContext) -> JsonValue:
        """The names asked for; their contents go in the next request (see
        `process_llm_request`)."""
        names = args.get(self._names_key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return {
                "error": f"'{self._names_key}' must be a list of strings.",
                "error_code": "INVALID_ARGUMENTS",
            }
        return {self._names_key: names, "status": self._status}

    def requested(self, llm_request: LlmRequest) -> Iterator[str]:
        """The names this tool's calls answered in the request's last turn asked for, in
        order (none when its last turn answers no call of this tool)."""
        last = llm_request.contents[-1] if llm_request.contents else None
        for response in last.function_responses if last else []:
            if response.name != self.name:
                continue
            names = (response.response or {}).get(self._names_key)
            for name in names if isinstance(names, list) else []:
                if isinstance(name, str):
                    yield name
