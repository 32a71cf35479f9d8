"""`GET /apps/{app}/app-info`: an app's LlmAgent tree in the reference's JSON (the keys and
values google-adk 2.13.0's api_server answers for the same tree)."""

from __future__ import annotations

from baton import App, LlmAgent, Workflow
from baton.models import ScriptedModel
from tests.server.conftest import StartLive


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def greeting(ctx: object) -> str:
    return "Be nice"


def assistant_app() -> App:
    helper = LlmAgent(
        name="helper", model=ScriptedModel(), description="helps", instruction=greeting
    )
    root = LlmAgent(
        name="root",
        model=ScriptedModel(),
        description="The root",
        instruction="Be nice {x?}",
        tools=[add],
        sub_agents=[helper],
    )
    return App(name="hello", root_agent=root)


def echo(node_input: object) -> object:
    return node_input


async def test_app_info_describes_the_agent_tree_as_the_reference_does(
    start_live: StartLive,
) -> None:
    live = await start_live([assistant_app()])
    r = await live.client.get("/apps/hello/app-info")
    assert r.status_code == 200, r.text
    body = r.json()
    # The parameters are the JSON Schema baton declares to models (the reference's adds
    # pydantic's titles).
    declared = body["agents"]["root"]["tools"][0]["functionDeclarations"][0]
    parameters = declared.pop("parametersJsonSchema")
    assert parameters["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert parameters["required"] == ["a", "b"]
    assert body == {
        "name": "hello",
        "rootAgentName": "root",
        "description": "The root",
        "language": "python",
        "isComputerUse": False,
        "agents": {
            "helper": {
                "name": "helper",
                "description": "helps",
                "instruction": "<InstructionProvider: greeting>",
                "tools": [],
                "sub_agents": [],
            },
            "root": {
                "name": "root",
                "description": "The root",
                "instruction": "Be nice {x?}",
                "tools": [
                    {"functionDeclarations": [{"description": "Add two numbers.", "name": "add"}]}
                ],
                "sub_agents": ["helper"],
            },
        },
    }


async def test_app_info_of_a_workflow_or_an_unknown_app_is_refused(start_live: StartLive) -> None:
    workflow = App(name="flow", root_agent=Workflow(name="wf", edges=[("START", echo)]))
    live = await start_live([assistant_app(), workflow])
    r = await live.client.get("/apps/flow/app-info")
    assert r.status_code == 400
    assert r.json()["error"] == "AppInfoUnavailableError"
    assert "root 'wf' of type Workflow, not an LlmAgent" in r.json()["detail"]
    missing = await live.client.get("/apps/nope/app-info")
    assert missing.status_code == 404
