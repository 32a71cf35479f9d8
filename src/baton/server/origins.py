"""Cross-origin access: which web origins may call the API from a browser.

A page served elsewhere (a team's own front end on another host or port) can call
the API only if the server names its origin in CORS headers. Origins are given
exactly, as a browser sends them (`scheme://host[:port]`, checked by
`settings.parse_origins`), or `*` for any.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from baton.server.settings import ANY_ORIGIN

__all__ = ["allow_origins"]


def allow_origins(app: FastAPI, origins: list[str]) -> None:
    """Answer CORS preflights and mark responses for `origins` (nothing when empty).

    API keys travel in headers, so no cookies are needed: credentials are allowed
    only for listed origins, never for `*` (browsers refuse that pair anyway).
    """
    if not origins:
        return
    app.add_middleware(
        CORSMiddleware,
        allow_origins=origins,
        allow_methods=["*"],
        allow_headers=["*"],
        allow_credentials=ANY_ORIGIN not in origins,
    )
