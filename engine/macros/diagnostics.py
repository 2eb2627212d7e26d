"""Warning codes, warnings, traces and mutations: what an evaluation reports besides its text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

MACRO_UNKNOWN = "macro_unknown"
MACRO_VALUE_MISSING = "macro_value_missing"
MACRO_PARSE_FAILED = "macro_parse_failed"
MACRO_ARG_ARITY_INVALID = "macro_arg_arity_invalid"
MACRO_ARG_TYPE_INVALID = "macro_arg_type_invalid"
MACRO_CONDITION_UNSUPPORTED = "macro_condition_unsupported"
MACRO_CYCLE_DETECTED = "macro_cycle_detected"
MACRO_DEPTH_LIMIT_EXCEEDED = "macro_depth_limit_exceeded"
MACRO_STEP_LIMIT_EXCEEDED = "macro_step_limit_exceeded"
MACRO_EXPANDED_LENGTH_LIMIT_EXCEEDED = "macro_expanded_length_limit_exceeded"
MACRO_MUTATION_LIMIT_EXCEEDED = "macro_mutation_limit_exceeded"
MACRO_UNMATCHED_CLOSING_BLOCK = "macro_unmatched_closing_block"
MACRO_SCOPED_BLOCK_UNCLOSED = "macro_scoped_block_unclosed"
MACRO_PREVIEW_SIDE_EFFECT_SUPPRESSED = "macro_preview_side_effect_suppressed"
MACRO_EVAL_PHASE_DISALLOWED = "macro_eval_phase_disallowed"
MACRO_READONLY_NAME_CONFLICT = "macro_readonly_name_conflict"
MACRO_INTERNAL_ERROR = "macro_internal_error"
MACRO_WRITE_FORBIDDEN = "macro_write_forbidden"
MACRO_NUMBER_NOT_FINITE = "macro_number_not_finite"
"""Arithmetic gave NaN or Infinity (or a write carried one): the variable keeps its value."""

#: Every code an evaluation can report.
WARNING_CODES = frozenset(
    {
        MACRO_UNKNOWN,
        MACRO_VALUE_MISSING,
        MACRO_PARSE_FAILED,
        MACRO_ARG_ARITY_INVALID,
        MACRO_ARG_TYPE_INVALID,
        MACRO_CONDITION_UNSUPPORTED,
        MACRO_CYCLE_DETECTED,
        MACRO_DEPTH_LIMIT_EXCEEDED,
        MACRO_STEP_LIMIT_EXCEEDED,
        MACRO_EXPANDED_LENGTH_LIMIT_EXCEEDED,
        MACRO_MUTATION_LIMIT_EXCEEDED,
        MACRO_UNMATCHED_CLOSING_BLOCK,
        MACRO_SCOPED_BLOCK_UNCLOSED,
        MACRO_PREVIEW_SIDE_EFFECT_SUPPRESSED,
        MACRO_EVAL_PHASE_DISALLOWED,
        MACRO_READONLY_NAME_CONFLICT,
        MACRO_INTERNAL_ERROR,
        MACRO_WRITE_FORBIDDEN,
        MACRO_NUMBER_NOT_FINITE,
    }
)

Phase = Literal["import", "preview", "dry_run", "assemble", "commit"]
PHASES: tuple[Phase, ...] = get_args(Phase)
Scope = Literal["local", "global"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MacroWarning:
    """Something the engine could not do as written; ``position`` is the offset of the fragment
    in the evaluated text (after legacy markers were rewritten)."""

    code: str
    message: str
    position: int
    macro_name: str = ""
    raw_text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Mutation:
    """One variable write, in evaluation order. ``value`` is the JSON value written (for a path
    write, the whole new value of the root key); a delete has no value."""

    kind: Literal["set", "delete"]
    scope: Scope
    key: str
    value: Any = None
    source_macro: str = ""

    def as_json(self) -> dict[str, Any]:
        """The mutation as the conformance interface prints it."""
        out: dict[str, Any] = {"kind": self.kind, "scope": self.scope, "key": self.key}
        if self.kind == "set":
            out["value"] = self.value
        return out


#: What a trace records: a macro call, an ``if`` block or a fragment kept as written.
TraceKind = Literal["macro", "if", "raw"]
#: Which branch of an ``if`` was taken (``raw`` when the block was kept as written).
TraceBranch = Literal["then", "else", "raw"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MacroTrace:
    """One evaluated fragment: a macro, an ``if`` block or a fragment kept raw."""

    macro_name: str
    raw_text: str
    resolved_text: str
    phase: Phase
    source_kind: TraceKind
    selected_branch: TraceBranch | None = None
