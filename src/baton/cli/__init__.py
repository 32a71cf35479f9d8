"""The `baton` command: run apps in the terminal, serve them, and operate their sessions."""

from baton.cli import running, serving, viewing

# isort: split
# After viewing: `sessions prune` is listed after `sessions list|show|delete`.
from baton.cli import maintenance, travel
from baton.cli.base import cli

__all__ = ["cli", "main"]

# Importing the command modules registers their commands on `cli`.
# In this order, which is the order `baton --help` lists them in.
_COMMANDS = (running, serving, viewing, maintenance, travel)


def main() -> None:
    """Entry point of the `baton` script."""
    cli()
