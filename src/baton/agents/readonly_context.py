"""`ReadonlyContext`, where the reference's code imports it from (`...agents.readonly_context`)."""

from baton.readonly_context import ReadonlyContext

__all__ = ["ReadonlyContext"]
