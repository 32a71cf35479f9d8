"""Agent and tool attributes code written for the reference reads and sets."""

from __future__ import annotations

from typing import Any

from baton import LlmAgent, types
from baton.models import ScriptedModel
from baton.tools import BaseTool, ToolContext
from tests.agents.conftest import MakeRunner


class Shout(BaseTool):
    """A tool written as the reference's docs show: its own __init__, not BaseTool's."""

    def __init__(self) -> None:
        self.name = "shout"
        self.description = "Shouts the word."

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema={"type": "object", "properties": {"word": {"type": "string"}}},
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        return {"said": str(args["word"]).upper()}


async def test_a_tool_that_skips_base_tool_init_reads_as_an_ordinary_tool(
    make: MakeRunner,
) -> None:
    assert (BaseTool.is_long_running, BaseTool.custom_metadata) == (False, None)
    tool = Shout()
    assert (tool.is_long_running, tool.custom_metadata) == (False, None)
    call = types.FunctionCall(id="c1", name="shout", args={"word": "hi"})
    model = ScriptedModel(responses=[call, "done"])
    h = await make(LlmAgent(name="agent", model=model, tools=[tool]))

    events = await h.start()

    parts = [p for e in events if e.content for p in e.content.parts or []]
    assert [p.function_response.response for p in parts if p.function_response] == [{"said": "HI"}]
    assert [p.text for p in parts if p.text] == ["done"]
