"""Server settings read from the command line and the environment (no FastAPI here).

The CLI imports this module for every command, `baton run` included, which must
work without the `server` extra.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "ANY_ORIGIN",
    "Limits",
    "keys_from_env",
    "origins_from_env",
    "parse_origins",
    "parse_size",
]

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


@dataclass(frozen=True)
class Limits:
    """How much a client may send and how long it may take: the server's defences.

    Args:
        max_body: the largest request body in bytes; a larger one is refused with 413
            before it is read.
        read_timeout: seconds a client has to send a request's headers, and again its
            body; a slower one gets 408 and its connection is closed.
        max_connections: connections (and requests in flight) served at once; more get
            503 until some finish.
        keep_alive: seconds an idle keep-alive connection stays open between requests.
    """

    max_body: int = 8 * 1024 * 1024
    read_timeout: float = 30.0
    max_connections: int = 1000
    keep_alive: float = 5.0

    def __post_init__(self) -> None:
        if self.max_body < 1 or self.max_connections < 1:
            raise ValueError(
                f"max_body ({self.max_body}) and max_connections ({self.max_connections}) "
                "must be at least 1."
            )
        if self.read_timeout <= 0 or self.keep_alive <= 0:
            raise ValueError(
                f"read_timeout ({self.read_timeout}) and keep_alive ({self.keep_alive}) "
                "must be positive seconds."
            )


_UNITS: Final = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*")


def parse_size(text: str) -> int:
    """Bytes from a size such as `8MB`, `512kb`, `1g` or `1048576` (units are powers of 1024).

    Raises:
        ValueError: not a size; the message shows the accepted forms.
    """
    match = _SIZE.fullmatch(text.lower())
    if match is None or match.group(2) not in _UNITS or float(match.group(1)) <= 0:
        raise ValueError(
            f"'{text}' is not a size; give bytes or a number with KB, MB or GB, e.g. 8MB."
        )
    return int(float(match.group(1)) * _UNITS[match.group(2)])
