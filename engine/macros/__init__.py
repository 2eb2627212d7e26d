"""The macro engine: SillyTavern 1.18's macro language plus the TavernHeadless Core Profile.

Pipeline: pre-process -> lexer -> parser (items, scoped pairing) -> evaluator -> post-process,
with a bounded cache of parsed templates. Use :func:`evaluate` with a :class:`MacroContext`::

    result = evaluate("{{setvar::mood::happy}}{{user}} is {{getvar::mood}}", context)
    result.text, result.warnings, result.mutations
"""

from __future__ import annotations

from engine.macros.api import MacroResult, evaluate, is_plain_text, parse
from engine.macros.cache import DEFAULT_CACHE, TemplateCache
from engine.macros.context import CardFields, ChatMessage, MacroContext
from engine.macros.diagnostics import (
    PHASES,
    WARNING_CODES,
    MacroTrace,
    MacroWarning,
    Mutation,
    Phase,
)
from engine.macros.envjson import EnvOptions, context_from_env
from engine.macros.evaluator import ACCESS_MODES, Access, MacroEnv
from engine.macros.limits import DEFAULT_LIMITS, Limits
from engine.macros.registry import (
    ArgSpec,
    MacroArgumentError,
    MacroDef,
    MacroKeepRaw,
    MacroValueMissing,
    Registry,
    default_registry,
)

__all__ = [
    "ACCESS_MODES",
    "Access",
    "DEFAULT_CACHE",
    "DEFAULT_LIMITS",
    "PHASES",
    "WARNING_CODES",
    "ArgSpec",
    "CardFields",
    "ChatMessage",
    "EnvOptions",
    "Limits",
    "MacroArgumentError",
    "MacroContext",
    "MacroDef",
    "MacroEnv",
    "MacroKeepRaw",
    "MacroResult",
    "MacroTrace",
    "MacroValueMissing",
    "MacroWarning",
    "Mutation",
    "Phase",
    "Registry",
    "TemplateCache",
    "context_from_env",
    "default_registry",
    "evaluate",
    "is_plain_text",
    "parse",
]
