"""Installs every built-in macro family into a registry, in SillyTavern's order."""

from __future__ import annotations

from engine.macros import (
    builtins_chat,
    builtins_core,
    builtins_instruct,
    builtins_names,
    builtins_vars,
)
from engine.macros.registry import Registry


def install_builtins(registry: Registry) -> Registry:
    """Register core, names, chat/state/time, variable and instruct/app macros."""
    builtins_core.install(registry)
    builtins_names.install(registry)
    builtins_chat.install(registry)
    builtins_vars.install(registry)
    builtins_instruct.install(registry)
    return registry
