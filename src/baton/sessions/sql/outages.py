"""Telling a lost database apart from an error of the call itself, as every driver shows it.

Each strategy (`dialect_*`) adds its own database's signs to these.
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, DisconnectionError

__all__ = ["is_lost_connection"]


def is_lost_connection(error: BaseException) -> bool:
    """True for the signs of a lost connection every driver shares: SQLAlchemy saw the
    connection invalidated, the pool refused a dead one, or the socket failed."""
    if isinstance(error, DBAPIError):
        return error.connection_invalidated or _is_socket_error(error.orig)
    return isinstance(error, DisconnectionError) or _is_socket_error(error)


def _is_socket_error(error: BaseException | None) -> bool:
    return isinstance(error, ConnectionError | TimeoutError) or (
        isinstance(error, OSError) and error.errno is not None
    )
