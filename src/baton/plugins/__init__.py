"""Plugins: runner-wide callbacks (`BasePlugin`), run in order by a `PluginManager`."""

from baton.plugins.base_plugin import BasePlugin
from baton.plugins.manager import PluginManager

__all__ = ["BasePlugin", "PluginManager"]
