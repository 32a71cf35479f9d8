"""What a process loads to start: `import baton` and `baton --help` leave out what they do
not use (SQLAlchemy until a SQL service is made, jsonschema until a JSON schema is checked,
the HTTP server and client until one is served or a webhook posted), and what was left out
is there, working, once it is used."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_DEFERRED = ("sqlalchemy", "jsonschema", "httpx", "fastapi", "starlette", "uvicorn", "mcp")


def _fresh_python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`script` run by a new interpreter, given `args` and then the deferred packages' names."""
    command = [sys.executable, "-c", script, *args, ",".join(_DEFERRED)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done


# Each check runs in a fresh interpreter: this one has long loaded everything.
_LOADED_ON_FIRST_USE = """
import asyncio, json, sys
from baton import (
    Agent, DatabaseArtifactService, InMemorySessionService, RequestInput, Runner,
    SqliteSessionService,
)
from baton.memory import SqliteMemoryService

DEFERRED = sys.argv[-1].split(",")
def loaded() -> list[str]:
    return [name for name in DEFERRED if name in sys.modules]

seen = {"import": loaded()}
agent = Agent(name="helper", model="gemini-2.5-flash")
runner = Runner(app_name="app", agent=agent, session_service=InMemorySessionService())
seen["runner in memory"] = loaded()
seen["its memory service"] = type(runner.memory_service).__name__

schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
try:
    RequestInput(message="?", response_schema=schema, timeout=5, on_timeout={"ok": "no"})
except ValueError as error:
    seen["bad on_timeout"] = "does not match the response_schema" in str(error)
seen["after a schema"] = loaded()

async def use_sql(db: str) -> list[object]:
    sessions = SqliteSessionService(db)
    session = await sessions.create_session(app_name="app", user_id="u", state={"k": 1})
    again = await sessions.get_session(app_name="app", user_id="u", session_id=session.id)
    sql_runner = Runner(app_name="app", agent=agent, session_service=sessions)
    artifacts = DatabaseArtifactService(f"sqlite:///{db}")
    memory = SqliteMemoryService(db)
    await sql_runner.close()
    used = (sql_runner.memory_service, artifacts, memory)
    return [again.state["k"], *(type(service).__name__ for service in used)]

seen["sql use"] = asyncio.run(use_sql(sys.argv[1]))
seen["after sql"] = loaded()
print(json.dumps(seen))
"""


def test_import_baton_loads_sqlalchemy_and_jsonschema_only_once_used(tmp_path: Path) -> None:
    done = _fresh_python(_LOADED_ON_FIRST_USE, str(tmp_path / "s.db"))
    assert json.loads(done.stdout) == {
        "import": [],
        "runner in memory": [],
        "its memory service": "NoneType",
        "bad on_timeout": True,
        "after a schema": ["jsonschema"],
        "sql use": [1, "SqlMemoryService", "DatabaseArtifactService", "SqliteMemoryService"],
        "after sql": ["sqlalchemy", "jsonschema"],
    }


_HELP = """
import sys
from baton.cli import main
deferred = sys.argv[-1].split(",")
sys.argv = ["baton", "--help"]
try:
    main()
finally:
    print("loaded:", [name for name in deferred if name in sys.modules], file=sys.stderr)
"""


def test_baton_help_loads_neither_the_server_nor_the_database_stack() -> None:
    done = _fresh_python(_HELP)
    assert "api_server" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "loaded: []"


_BUILT_AT_IMPORT = """
import json, sys
import pydantic
import baton
from baton import Event, types

def built() -> list[str]:
    found, classes = [], [pydantic.BaseModel]
    while classes:
        cls = classes.pop()
        classes.extend(cls.__subclasses__())
        if cls.__module__.startswith("baton") and cls.__dict__.get("__pydantic_complete__"):
            found.append(cls.__name__)
    return sorted(found)

seen = {"import": built()}
event = Event(author="a", content=types.Content(role="user", parts=[types.Part(text="hi")]))
again = Event.model_validate_json(event.model_dump_json())
seen["round trip"] = again == event and again.content.parts[0].text == "hi"
seen["after use"] = [name for name in ("Event", "Content", "Part") if name in built()]
print(json.dumps(seen))
"""


def test_import_baton_builds_only_the_models_it_makes_instances_of() -> None:
    # Each model's validator and serializer is built when it is first used (WireModel's
    # defer_build): an import built ~100 of them, ~200M instructions of a 1.5G import.
    done = _fresh_python(_BUILT_AT_IMPORT)
    seen = json.loads(done.stdout)
    # Module-level instances: the built-in tools' entries, two tools' argument models and
    # the START node.
    assert seen["import"] == [
        "EnterpriseWebSearch",
        "GoogleSearch",
        "StartNode",
        "Tool",
        "UrlContext",
        "get_user_choice_arguments",
        "load_memory_arguments",
    ]
    assert seen["round trip"] is True
    assert seen["after use"] == ["Event", "Content", "Part"]
