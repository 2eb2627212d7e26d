"""Folding mutation logs into state: the only place that decides what a log means.

A *delta* maps each key a log touched to its final value, or to :data:`DELETED`. Applying
deltas in order onto a dict gives the state; the engine never replays more than a bounded
window of them (see :mod:`engine.variables.store`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from engine.variables.values import Mutation, Scope


class _Deleted:
    """The marker for "this key was deleted" inside a delta."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DELETED"


DELETED: Final = _Deleted()


def delta_of(mutations: Iterable[Mutation], scope: Scope) -> dict[str, Any]:
    """The net effect of ``mutations`` on one scope, in log order."""
    delta: dict[str, Any] = {}
    for mutation in mutations:
        if mutation.scope != scope:
            continue
        delta[mutation.key] = DELETED if mutation.op == "delete" else mutation.value
    return delta


def apply_delta(state: dict[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """Apply ``delta`` to ``state`` in place and return it."""
    for key, value in delta.items():
        if value is DELETED:
            state.pop(key, None)
        else:
            state[key] = value
    return state


def fold(
    mutations: Iterable[Mutation], scope: Scope, base: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``base`` (not modified) with ``mutations`` of ``scope`` applied in order."""
    return apply_delta(dict(base or {}), delta_of(mutations, scope))
