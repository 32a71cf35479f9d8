"""`CallbackContext`, where the reference's code imports it from (`...agents.callback_context`)."""

from baton.callback_context import CallbackContext

__all__ = ["CallbackContext"]
