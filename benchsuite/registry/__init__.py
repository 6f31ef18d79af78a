"""Plugins: discovery through pluggy, and the new-mixer scaffold."""

from benchsuite.registry.plugins import PluginFailure, PluginInfo, Registry, load_registry

__all__ = ["PluginFailure", "PluginInfo", "Registry", "load_registry"]
