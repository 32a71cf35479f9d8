"""`baton api_server` and `baton web`: serve the apps of a folder."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Annotated

import typer

from baton.cli.base import (
    DbOption,
    HostOption,
    KeyOption,
    PortOption,
    cli,
    console,
    execute,
    open_catalog,
)
from baton.server.security import keys_from_env

__all__ = ["api_server", "web"]


@cli.command("api_server")
def api_server(
    agents_dir: Annotated[
        Path, typer.Argument(help="The folder of app folders to serve.", metavar="AGENTS_DIR")
    ],
    db: DbOption = None,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    api_key: KeyOption = None,
) -> None:
    """Serve the apps of AGENTS_DIR over HTTP: the reference API plus pending inputs.

    Routes: /list-apps, /apps/{app}/users/{user}/sessions (and /{id}), /run, /run_sse,
    /apps/{app}/users/{user}/pending, .../interrupts/{id}/respond; OpenAPI at /docs.

    Examples:

    \b
      baton api_server examples/
      baton api_server examples/ --db postgresql+asyncpg://localhost/baton --port 9000
      BATON_API_KEY=alice:s3cret baton api_server examples/
    """
    execute(_serve(agents_dir, db, host, port, api_key or [], web=False))


@cli.command()
def web(
    agents_dir: Annotated[
        Path, typer.Argument(help="The folder of app folders to serve.", metavar="AGENTS_DIR")
    ],
    db: DbOption = None,
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    api_key: KeyOption = None,
) -> None:
    """Serve the apps and the web inbox: answer pending inputs in a browser.

    The page lists every question waiting across sessions, with a form built from its
    response schema, updates live, starts runs, and shows each session's timeline.

    Example:

    \b
      baton web examples/        then open the URL it prints
    """
    execute(_serve(agents_dir, db, host, port, api_key or [], web=True))


async def _serve(
    agents_dir: Path, db: str | None, host: str, port: int, keys: list[str], *, web: bool
) -> None:
    # FastAPI and uvicorn are the `server` extra; `baton run` must work without them.
    import uvicorn

    from baton.server.app import create_app
    from baton.server.security import ApiKeys

    every_key = [*keys, *keys_from_env(os.environ.get("BATON_API_KEY"))]
    async with open_catalog(agents_dir, db) as catalog:
        app = create_app(catalog, api_keys=ApiKeys.parse(every_key), web=web)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, ws="none"))
        async with asyncio.TaskGroup() as group:
            serving = group.create_task(server.serve())
            while not server.started and not serving.done():  # noqa: ASYNC110 - uvicorn offers a flag, not an event
                await asyncio.sleep(0.05)
            if server.started:
                bound = server.servers[0].sockets[0].getsockname()
                what = "web inbox" if web else "API"
                apps = ", ".join(catalog.names) or "none"
                console.print(
                    f"baton {what} at [bold]http://{bound[0]}:{bound[1]}/[/] (apps: {apps}; "
                    f"keys {'required' if every_key else 'off'})",
                    highlight=False,
                    soft_wrap=True,  # one line, so the URL is never broken
                )
