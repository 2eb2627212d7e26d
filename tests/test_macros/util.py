"""Helpers shared by the macro tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from engine.macros import MacroContext, MacroResult, evaluate

NOW = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def ctx(**fields: Any) -> MacroContext:
    """A context with Alice and Bob and the frozen clock the vectors use."""
    fields.setdefault("user", "Alice")
    fields.setdefault("char", "Bob")
    fields.setdefault("now", NOW)
    return MacroContext(**fields)


def run(text: str, context: MacroContext | None = None, **options: Any) -> MacroResult:
    """Evaluate ``text`` (on a fresh context unless one is given)."""
    return evaluate(text, context if context is not None else ctx(), **options)


def text(template: str, context: MacroContext | None = None, **options: Any) -> str:
    """Only the evaluated text."""
    return run(template, context, **options).text


def codes(result: MacroResult) -> list[str]:
    """The warning codes of a result, in order."""
    return [warning.code for warning in result.warnings]
