"""Variable values: scopes, mutations, log entries and the five-scope state.

A mutation is ``{op: set|delete, scope, key, value}`` with a JSON value. Every mutation that is
persisted is also kept in the log, with where it came from (which floor and page, or an explicit
write), so the history of any variable can be listed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, get_args

from engine.errors import EngineError

Scope = Literal["page", "floor", "branch", "chat", "global"]
"""Where a variable lives, narrowest first: the one definition of the five scopes."""
MutationOp = Literal["set", "delete"]
LogSource = Literal["page", "explicit"]

SCOPES: Final[tuple[Scope, ...]] = get_args(Scope)
"""Read order, narrowest first."""
LOCAL_SCOPES: Final[tuple[Scope, ...]] = ("page", "floor", "branch", "chat")
"""What the SillyTavern local view reads; the global view reads only ``global``."""

# Bounds on what one write may carry, so a runaway macro cannot bloat a row.
MAX_KEY_LENGTH: Final = 200
MAX_WRITES_PER_PAGE: Final = 10_000


class VariableValueError(EngineError, ValueError):
    """A value no variable may hold (a number that is not finite); refused before it is
    staged or stored. Also a ValueError, so a tool call reports it to the model."""


class UnknownScopeError(EngineError, ValueError):
    """A write names a scope that is not one of :data:`SCOPES`; refused before anything is
    stored. Also a ValueError, so a tool call reports it to the model."""


def check_scope(scope: str) -> None:
    """Refuse a scope that is not one of the five (:class:`UnknownScopeError`)."""
    if scope not in SCOPES:
        raise UnknownScopeError(f"unknown variable scope {scope!r} (one of {', '.join(SCOPES)})")


def first_non_finite(value: Any) -> float | None:
    """The first NaN or infinite number inside ``value`` (a JSON-like value), else None.

    JSON has no such numbers: stored, they make SQLite's JSON text invalid, PostgreSQL refuses
    them and an export cannot be read back; so variables never hold them."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return item
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return None


def check_storable(key: str, value: Any) -> None:
    """Raise :class:`VariableValueError` when ``value`` cannot be stored in variable ``key``."""
    bad = first_non_finite(value)
    if bad is not None:
        raise VariableValueError(
            f"variable '{key[:MAX_KEY_LENGTH]}' cannot hold {bad!r}: only finite numbers are "
            "stored (JSON has no NaN or Infinity)"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Mutation:
    """One staged or explicit change of a variable; ``value`` is ignored for deletes."""

    op: MutationOp
    scope: Scope
    key: str
    value: Any = None

    @classmethod
    def set(cls, scope: Scope, key: str, value: Any) -> Mutation:
        """A ``set`` of ``key`` in ``scope``; a value no variable may hold (see
        :func:`check_storable`) raises :class:`VariableValueError`. (Rows read back from
        storage are built with the constructor, unchecked, so old data always loads.)"""
        check_storable(key, value)
        return cls(op="set", scope=scope, key=key, value=value)

    @classmethod
    def delete(cls, scope: Scope, key: str) -> Mutation:
        """A ``delete`` of ``key`` in ``scope``."""
        return cls(op="delete", scope=scope, key=key)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry:
    """A persisted mutation and where it came from.

    ``branch_id``/``seq`` position it: a page's writes sit at their floor; an explicit write
    sits "before floor ``seq``" of the branch that made it (the branch's next floor).
    """

    id: int
    mutation: Mutation
    source: LogSource
    session_id: int
    realm_id: int
    branch_id: int | None
    seq: int | None
    floor_id: int | None
    page_id: int | None
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryEntry:
    """One write of a variable as history shows it."""

    scope: Scope
    key: str
    value: Any
    deleted: bool
    branch: str | None
    floor: int | None
    page: int | None
    source: LogSource
    at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class VariableState:
    """The five scopes as seen from one point of a branch."""

    page: Mapping[str, Any] = field(default_factory=dict)
    floor: Mapping[str, Any] = field(default_factory=dict)
    branch: Mapping[str, Any] = field(default_factory=dict)
    chat: Mapping[str, Any] = field(default_factory=dict)
    global_: Mapping[str, Any] = field(default_factory=dict)

    def scope(self, scope: Scope) -> Mapping[str, Any]:
        """The values of one scope."""
        return {
            "page": self.page,
            "floor": self.floor,
            "branch": self.branch,
            "chat": self.chat,
            "global": self.global_,
        }[scope]

    def local(self) -> dict[str, Any]:
        """The SillyTavern local view: ``page -> floor -> branch -> chat`` (narrowest wins)."""
        merged: dict[str, Any] = {}
        for scope in reversed(LOCAL_SCOPES):
            merged.update(self.scope(scope))
        return merged

    def merged(self) -> dict[str, Any]:
        """Every scope, narrowest first wins (``page`` over ... over ``global``)."""
        merged = dict(self.global_)
        merged.update(self.local())
        return merged

    def get(self, key: str, default: Any = None) -> Any:
        """Read ``key`` from the narrowest scope that has it."""
        for scope in SCOPES:
            values = self.scope(scope)
            if key in values:
                return values[key]
        return default


@dataclass(frozen=True, slots=True, kw_only=True)
class NewLogEntry:
    """A log entry to persist (storage assigns ``id`` and ``created_at``)."""

    mutation: Mutation
    source: LogSource
    session_id: int
    realm_id: int
    branch_id: int | None = None
    seq: int | None = None
    floor_id: int | None = None
    page_id: int | None = None
