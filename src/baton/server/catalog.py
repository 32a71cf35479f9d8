"""The apps of an agents folder: import each `agent.py`, keep its App and a Runner for it."""

from __future__ import annotations

import importlib.util
import sys
import traceback
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import final

from baton.artifacts import BaseArtifactService
from baton.database_memory import memory_in
from baton.errors import AppNotFoundError, BatonError, StoreUnavailableError
from baton.memory import InMemoryMemoryService
from baton.runner import App, Runner, default_worker_id
from baton.sessions.services import (
    BaseSessionService,
    DatabaseSessionService,
    InMemorySessionService,
    SqliteSessionService,
)
from baton.sessions.store import SessionKey
from baton.types import SessionId
from baton.workflow.nodes import Node

__all__ = [
    "AppCatalog",
    "AppLoadError",
    "DatabaseUnavailableError",
    "ShuttingDownError",
    "check_database",
    "default_db_path",
    "find_app_folders",
    "load_app",
    "open_session_service",
]


class AppLoadError(BatonError, ImportError):
    """An app folder could not be imported, or exports neither `app` nor `root_agent`."""


class DatabaseUnavailableError(BatonError, ConnectionError):
    """The `--db` database is of a kind baton does not support, or cannot be opened."""


class ShuttingDownError(BatonError, RuntimeError):
    """This server is shutting down and starts no new runs; send the request to another
    process (or again once this one is back)."""


def default_db_path(agents_dir: Path) -> Path:
    """Where sessions live unless `--db` says otherwise: `AGENTS_DIR/.baton/sessions.db`."""
    return agents_dir / ".baton" / "sessions.db"


def open_session_service(db: str | None, *, default: Path) -> BaseSessionService:
    """The session service for a `--db` value.

    `None` is the SQLite file `default` (its folder is created); `memory://` keeps
    sessions in this process; any other `scheme://` is a database URL
    (`sqlite:///file.db`, `postgresql+asyncpg://user@host/db`); anything else is a
    SQLite file path.
    """
    if db is None:
        default.parent.mkdir(parents=True, exist_ok=True)
        return SqliteSessionService(str(default))
    if db in ("memory://", ":memory:"):
        return InMemorySessionService()
    if "://" in db:
        try:
            return DatabaseSessionService(db)
        except ValueError as exc:
            raise DatabaseUnavailableError(f"--db: {exc}") from exc
    return SqliteSessionService(db)


async def check_database(service: BaseSessionService, app_name: str) -> None:
    """Read from the database once, so a wrong `--db` fails now with a clear message.

    Raises:
        DatabaseUnavailableError: the database cannot be opened or read.
    """
    probe = SessionKey(app_name, "-", SessionId("-"))
    try:
        await service.store.get_session(probe, with_events=False)
    except Exception as caught:  # any driver's failure (refused, auth, bad path) means the same
        # An unreachable database is named by what the driver said.
        exc = caught.__cause__ if isinstance(caught, StoreUnavailableError) else caught
        exc = exc if isinstance(exc, BaseException) else caught
        cause = " ".join(str(exc).split()) or type(exc).__name__
        raise DatabaseUnavailableError(
            f"cannot open the database: {type(exc).__name__}: {cause}. Check --db (is the "
            "database server running, and its folder or credentials right?)."
        ) from exc


def find_app_folders(agents_dir: Path) -> list[Path]:
    """The sub-folders of `agents_dir` that hold an `agent.py`, sorted by name.

    Raises:
        AppLoadError: `agents_dir` is not a folder.
    """
    if not agents_dir.is_dir():
        raise AppLoadError(f"agents folder '{agents_dir}' does not exist or is not a folder.")
    return sorted(p for p in agents_dir.iterdir() if p.is_dir() and (p / "agent.py").is_file())


def load_app(folder: Path) -> App:
    """Import `folder/agent.py` and return its `app` (preferred) or an App around `root_agent`.

    The folder's parent goes on `sys.path`, so `agent.py` may import its siblings as
    `<folder>.<module>`.

    Raises:
        AppLoadError: the file is missing, raises on import, or exports neither name.
    """
    source = folder / "agent.py"
    if not source.is_file():
        raise AppLoadError(f"'{folder}' has no agent.py; an app folder needs one.")
    module = _import(folder, source)
    exported = getattr(module, "app", None)
    if isinstance(exported, App):
        return exported
    root = getattr(module, "root_agent", None)
    if isinstance(root, Node):
        return App(name=folder.name, root_agent=root)
    raise AppLoadError(
        f"'{source}' exports neither `app` (a baton App) nor `root_agent` (a workflow or "
        "agent); add `app = App(name=..., root_agent=...)` at module level."
    )


def _import(folder: Path, source: Path) -> object:
    parent = str(folder.resolve().parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    name = f"baton_apps.{folder.name}.agent"
    spec = importlib.util.spec_from_file_location(name, source)
    if spec is None or spec.loader is None:  # pragma: no cover - only for non-.py files
        raise AppLoadError(f"'{source}' cannot be imported as a Python module.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        last = traceback.format_exception_only(exc)[-1].strip()
        raise AppLoadError(
            f"app folder '{folder.name}' failed to import: {last} (in {source}). Fix the "
            "error, or move the folder out of the agents folder."
        ) from exc
    return module


@final
@dataclass
class AppCatalog:
    """The served apps by name, each with its Runner over one shared session service."""

    session_service: BaseSessionService
    runners: dict[str, Runner] = field(default_factory=dict[str, Runner])

    @classmethod
    def from_folder(cls, agents_dir: Path, session_service: BaseSessionService) -> AppCatalog:
        """Load every app folder of `agents_dir` (every error at once, in one AppLoadError)."""
        apps: list[App] = []
        problems: list[str] = []
        for folder in find_app_folders(agents_dir):
            try:
                apps.append(load_app(folder))
            except AppLoadError as exc:
                problems.append(str(exc))
        if problems:
            raise AppLoadError("\n".join(problems))
        return cls.of(apps, session_service)

    @classmethod
    def of(
        cls,
        apps: list[App],
        session_service: BaseSessionService,
        *,
        lease_ttl: timedelta = timedelta(seconds=30),
        worker_id: str | None = None,
    ) -> AppCatalog:
        """A catalog of the given apps, their Runners sharing one worker identity."""
        catalog = cls(session_service)
        worker_id = worker_id or default_worker_id()
        artifacts = BaseArtifactService(session_service.store)
        # One memory service for the served apps: in the sessions' database when it is
        # SQL, else in memory as the reference's server keeps it.
        memory = memory_in(session_service.store) or InMemoryMemoryService()
        for app in apps:
            if app.name in catalog.runners:
                raise AppLoadError(f"two app folders define an app named '{app.name}'.")
            catalog.runners[app.name] = Runner(
                app=app,
                session_service=session_service,
                # Artifacts live in the sessions' store: deleted with their session.
                artifact_service=artifacts,
                memory_service=memory,
                lease_ttl=lease_ttl,
                worker_id=worker_id,
            )
        return catalog

    @property
    def names(self) -> list[str]:
        """The app names, sorted."""
        return sorted(self.runners)

    def runner(self, app_name: str) -> Runner:
        """The Runner of an app.

        Raises:
            AppNotFoundError: no app of that name is served.
        """
        runner = self.runners.get(app_name)
        if runner is None:
            served = ", ".join(self.names) or "none"
            raise AppNotFoundError(f"app '{app_name}' is not served (served: {served}).")
        return runner
