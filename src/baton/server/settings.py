"""Server settings read from the command line and the environment (no FastAPI here).

The CLI imports this module for every command, `baton run` included, which must
work without the `server` extra.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

__all__ = ["ANY_ORIGIN", "keys_from_env", "origins_from_env", "parse_origins"]

ANY_ORIGIN = "*"
"""An allowed origin that admits every web origin."""


def keys_from_env(value: str | None) -> list[str]:
    """The keys in a `BATON_API_KEY` value (comma-separated; blanks ignored)."""
    return _listed(value)


def origins_from_env(value: str | None) -> list[str]:
    """The origins in a `BATON_ALLOW_ORIGINS` value (comma-separated; blanks ignored)."""
    return _listed(value)


def _listed(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def parse_origins(specs: Iterable[str]) -> list[str]:
    """Checked web origins (`scheme://host[:port]`, lower-cased), in order, without repeats.

    Raises:
        ValueError: an origin a browser would never send; the message names it.
    """
    origins: list[str] = []
    for spec in specs:
        origin = spec if spec == ANY_ORIGIN else _checked(spec)
        if origin not in origins:
            origins.append(origin)
    return origins


def _checked(spec: str) -> str:
    parts = urlsplit(spec)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"allowed origin '{spec}' is not an origin; give it as a browser sends it, "
            "e.g. https://app.example.com or http://localhost:3000 (or * for any)."
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(
            f"allowed origin '{spec}' has more than scheme, host and port; drop the rest "
            f"(e.g. {parts.scheme}://{parts.netloc})."
        )
    return f"{parts.scheme}://{parts.netloc}".lower()
