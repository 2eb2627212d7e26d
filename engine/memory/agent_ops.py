"""Parsing and strict validation of the memory agent's JSON ops.

Nothing the model says is trusted: the text must be one JSON object (optionally in a code
fence); every op is checked on its own (types, lengths against named limits, scopes against the
allowed set, ids against the alias table of :class:`~engine.memory.agent_context.AgentContext`)
and dropped with a :class:`~engine.memory.plan.Diagnostic` when wrong. Validation never raises.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.memory.agent_context import AgentContext
from engine.memory.plan import Diagnostic
from engine.memory.records import MemoryKind, MemoryRecord, MemoryScope, normalize_key
from engine.memory.sanitize import neutralize

MAX_AGENT_OUTPUT_CHARS = 20_000
MAX_TURN_SUMMARY_CHARS = 1000
MAX_FACT_KEY_CHARS = 80
MAX_FACT_VALUE_CHARS = 500
MAX_OPEN_LOOP_CHARS = 400
MAX_REASON_CHARS = 200
MAX_OPS_PER_LIST = 20

_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL | re.IGNORECASE)
_FIELDS: Mapping[str, tuple[str, ...]] = {
    "turn_summary": ("turn_summary", "turnSummary", "micro_summary", "microSummary"),
    "facts_add": ("facts_add", "factsAdd"),
    "facts_update": ("facts_update", "factsUpdate"),
    "facts_deprecate": ("facts_deprecate", "factsDeprecate"),
    "open_loops_add": ("open_loops_add", "openLoopsAdd"),
    "open_loops_resolve": ("open_loops_resolve", "openLoopsResolve"),
}
_KNOWN = frozenset(name for names in _FIELDS.values() for name in names)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentLimits:
    """Named bounds on the agent's output."""

    max_output_chars: int = MAX_AGENT_OUTPUT_CHARS
    max_turn_summary_chars: int = MAX_TURN_SUMMARY_CHARS
    max_fact_key_chars: int = MAX_FACT_KEY_CHARS
    max_fact_value_chars: int = MAX_FACT_VALUE_CHARS
    max_open_loop_chars: int = MAX_OPEN_LOOP_CHARS
    max_reason_chars: int = MAX_REASON_CHARS
    max_ops_per_list: int = MAX_OPS_PER_LIST


@dataclass(frozen=True, slots=True, kw_only=True)
class FactAdd:
    key: str
    value: str
    scope: MemoryScope | None
    importance: float | None
    confidence: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class FactUpdate:
    record: MemoryRecord
    value: str
    importance: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class FactDeprecate:
    record: MemoryRecord
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopAdd:
    text: str
    scope: MemoryScope | None
    importance: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopResolve:
    record: MemoryRecord
    resolution: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidatedOps:
    """The ops that passed; ``parsed`` False means the output was not a JSON object at all."""

    parsed: bool
    turn_summary: str | None = None
    facts_add: tuple[FactAdd, ...] = ()
    facts_update: tuple[FactUpdate, ...] = ()
    facts_deprecate: tuple[FactDeprecate, ...] = ()
    loops_add: tuple[LoopAdd, ...] = ()
    loops_resolve: tuple[LoopResolve, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = field(default_factory=tuple)


def parse_agent_json(
    raw: str, limits: AgentLimits
) -> tuple[dict[str, Any] | None, Diagnostic | None]:
    """The JSON object in ``raw`` (first code fence, else the whole text), or a diagnostic."""
    if len(raw) > limits.max_output_chars:
        return None, Diagnostic(
            code="output_too_long",
            message=f"agent output has {len(raw)} characters, limit {limits.max_output_chars}",
        )
    fenced = _FENCE.search(raw)
    body = fenced.group(1) if fenced else raw.strip()
    try:
        value = json.loads(body)
    except (ValueError, RecursionError) as exc:
        return None, Diagnostic(code="invalid_json", message=f"agent output is not JSON: {exc}")
    if not isinstance(value, dict):
        return None, Diagnostic(
            code="not_an_object", message=f"agent output is a JSON {type(value).__name__}"
        )
    return value, None


class _Checker:
    """Collects diagnostics while checking one output."""

    def __init__(self, limits: AgentLimits, allowed_scopes: Collection[MemoryScope]) -> None:
        self.limits = limits
        self.allowed = allowed_scopes
        self.notes: list[Diagnostic] = []

    def reject(self, code: str, where: str, message: str) -> None:
        self.notes.append(Diagnostic(code=code, message=message, where=where))

    def text(
        self,
        item: Mapping[str, Any],
        names: tuple[str, ...],
        where: str,
        limit: int,
        *,
        required: bool = True,
    ) -> str | None:
        for name in names:
            if name in item:
                value = item[name]
                if not isinstance(value, str):
                    self.reject(
                        "wrong_type",
                        f"{where}.{name}",
                        f"expected a string, got {type(value).__name__}",
                    )
                    return None
                value = value.strip()
                if not value:
                    break
                if len(value) > limit:
                    self.reject(
                        "too_long", f"{where}.{name}", f"{len(value)} characters, limit {limit}"
                    )
                    return None
                return value
        if required:
            self.reject("missing", where, f"needs a non-empty {'/'.join(names)}")
        return None

    def score(self, item: Mapping[str, Any], name: str, where: str) -> tuple[bool, float | None]:
        if name not in item or item[name] is None:
            return True, None
        value = item[name]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            self.reject(
                "wrong_type", f"{where}.{name}", f"expected a number in [0, 1], got {value!r}"
            )
            return False, None
        if not 0.0 <= value <= 1.0:
            self.reject("clamped", f"{where}.{name}", f"{value} clamped to [0, 1]")
        return True, min(1.0, max(0.0, float(value)))

    def scope(self, item: Mapping[str, Any], where: str) -> tuple[bool, MemoryScope | None]:
        if "scope" not in item or item["scope"] is None:
            return True, None
        raw = item["scope"]
        try:
            scope = MemoryScope(raw.strip().lower()) if isinstance(raw, str) else None
        except ValueError:
            scope = None
        if scope is None or scope not in self.allowed:
            self.reject("scope_not_allowed", f"{where}.scope", f"scope {raw!r} is not allowed")
            return False, None
        return True, scope


def _items(
    obj: Mapping[str, Any], field_name: str, check: _Checker
) -> list[tuple[str, dict[str, Any]]]:
    for name in _FIELDS[field_name]:
        if name in obj:
            value = obj[name]
            break
    else:
        return []
    if value is None:
        return []
    if not isinstance(value, list):
        check.reject("wrong_type", field_name, f"expected a list, got {type(value).__name__}")
        return []
    if len(value) > check.limits.max_ops_per_list:
        check.reject(
            "too_many",
            field_name,
            f"{len(value)} ops, limit {check.limits.max_ops_per_list}; the rest dropped",
        )
        value = value[: check.limits.max_ops_per_list]
    out: list[tuple[str, dict[str, Any]]] = []
    for index, item in enumerate(value):
        where = f"{field_name}[{index}]"
        if isinstance(item, dict):
            out.append((where, item))
        else:
            check.reject("wrong_type", where, f"expected an object, got {type(item).__name__}")
    return out


def _by_alias(
    context: AgentContext,
    kind: MemoryKind,
    check: _Checker,
    where: str,
    item: Mapping[str, Any],
    touched: set[str],
) -> MemoryRecord | None:
    alias = item.get("id")
    record = context.resolve(alias, kind)
    if record is None:
        check.reject(
            "unknown_id",
            f"{where}.id",
            f"{alias!r} is not a listed {kind.value} id; ops may only use listed ids",
        )
        return None
    if record.scope not in check.allowed:
        check.reject(
            "scope_not_allowed",
            f"{where}.id",
            f"{alias} is a {record.scope.value} memory, which this agent may not change",
        )
        return None
    if record.id in touched:
        check.reject(
            "duplicate_target", f"{where}.id", f"{alias} is already changed by this output"
        )
        return None
    touched.add(record.id)
    return record


def validate_agent_ops(
    raw: str,
    *,
    context: AgentContext,
    allowed_scopes: Collection[MemoryScope],
    limits: AgentLimits | None = None,
) -> ValidatedOps:
    """Parse and check the agent's output; keeps only valid ops, never raises."""
    limits = limits or AgentLimits()
    obj, problem = parse_agent_json(raw, limits)
    if obj is None:
        return ValidatedOps(parsed=False, diagnostics=(problem,) if problem else ())
    check = _Checker(limits, allowed_scopes)
    for name in obj:
        if name not in _KNOWN:
            check.reject("unknown_field", name, "field ignored")
    summary: str | None = None
    for name in _FIELDS["turn_summary"]:
        if name in obj and obj[name] is not None:
            value = obj[name]
            if not isinstance(value, str):
                check.reject("wrong_type", name, f"expected a string, got {type(value).__name__}")
            elif value.strip():
                summary = value.strip()
                if len(summary) > limits.max_turn_summary_chars:
                    check.reject(
                        "truncated", name, f"cut to {limits.max_turn_summary_chars} chars"
                    )
                    summary = summary[: limits.max_turn_summary_chars].rstrip()
            break
    touched: set[str] = set()
    adds: dict[str, FactAdd] = {}
    for where, item in _items(obj, "facts_add", check):
        key = check.text(item, ("key", "fact_key", "factKey"), where, limits.max_fact_key_chars)
        value = check.text(item, ("value", "content"), where, limits.max_fact_value_chars)
        ok_scope, scope = check.scope(item, where)
        ok_imp, importance = check.score(item, "importance", where)
        ok_conf, confidence = check.score(item, "confidence", where)
        if key is None or value is None or not (ok_scope and ok_imp and ok_conf):
            continue
        if "\n" in key or neutralize(key).flagged:
            check.reject("bad_key", f"{where}.key", "a key is one plain line of text")
            continue
        norm = normalize_key(key)
        if norm in adds:
            check.reject("duplicate_key", where, f"key {norm!r} added twice; the last one kept")
        adds[norm] = FactAdd(
            key=norm, value=value, scope=scope, importance=importance, confidence=confidence
        )
    updates: list[FactUpdate] = []
    for where, item in _items(obj, "facts_update", check):
        value = check.text(item, ("value", "content"), where, limits.max_fact_value_chars)
        ok_imp, importance = check.score(item, "importance", where)
        if value is None or not ok_imp:
            continue
        record = _by_alias(context, MemoryKind.FACT, check, where, item, touched)
        if record is not None:
            updates.append(FactUpdate(record=record, value=value, importance=importance))
    deprecations: list[FactDeprecate] = []
    for where, item in _items(obj, "facts_deprecate", check):
        reason = check.text(item, ("reason",), where, limits.max_reason_chars, required=False)
        record = _by_alias(context, MemoryKind.FACT, check, where, item, touched)
        if record is not None:
            deprecations.append(FactDeprecate(record=record, reason=reason or "deprecated"))
    loops: list[LoopAdd] = []
    for where, item in _items(obj, "open_loops_add", check):
        text = check.text(item, ("text", "content", "value"), where, limits.max_open_loop_chars)
        ok_scope, scope = check.scope(item, where)
        ok_imp, importance = check.score(item, "importance", where)
        if text is not None and ok_scope and ok_imp:
            loops.append(LoopAdd(text=text, scope=scope, importance=importance))
    resolves: list[LoopResolve] = []
    for where, item in _items(obj, "open_loops_resolve", check):
        resolution = check.text(
            item, ("resolution", "reason", "value"), where, limits.max_reason_chars, required=False
        )
        record = _by_alias(context, MemoryKind.OPEN_LOOP, check, where, item, touched)
        if record is not None:
            resolves.append(LoopResolve(record=record, resolution=resolution or "resolved"))
    return ValidatedOps(
        parsed=True,
        turn_summary=summary,
        facts_add=tuple(adds.values()),
        facts_update=tuple(updates),
        facts_deprecate=tuple(deprecations),
        loops_add=tuple(loops),
        loops_resolve=tuple(resolves),
        diagnostics=tuple(check.notes),
    )
