"""Checks every timeline write passes: names, staged variable writes and a floor's inputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from engine.errors import LimitExceededError
from engine.timeline.errors import InvalidNameError
from engine.timeline.values import MAX_NAME_LENGTH, NewMessage
from engine.variables.values import (
    MAX_KEY_LENGTH,
    MAX_WRITES_PER_PAGE,
    Mutation,
    UnknownScopeError,
    check_scope,
)

__all__ = ["MAX_INPUTS_PER_FLOOR", "check_inputs", "check_name", "check_writes"]

MAX_INPUTS_PER_FLOOR: Final = 200
"""User messages one floor may collect."""


def check_name(name: str, *, what: str) -> str:
    """Refuse an empty or over-long name."""
    if not name.strip():
        raise InvalidNameError(f"{what} name must not be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise LimitExceededError(
            f"{what} name {name[:40]!r}... is {len(name)} characters long "
            f"(at most {MAX_NAME_LENGTH})",
            limit="MAX_NAME_LENGTH",
            value=MAX_NAME_LENGTH,
        )
    return name


def check_writes(writes: Sequence[Mutation], *, where: str) -> None:
    """Refuse staged writes that break a limit or name an unknown scope."""
    if len(writes) > MAX_WRITES_PER_PAGE:
        raise LimitExceededError(
            f"{where}: {len(writes)} variable writes (at most {MAX_WRITES_PER_PAGE})",
            limit="MAX_WRITES_PER_PAGE",
            value=MAX_WRITES_PER_PAGE,
        )
    for write in writes:
        try:
            check_scope(write.scope)
        except UnknownScopeError as exc:
            raise UnknownScopeError(f"{where}: {exc}") from None
        if not write.key or len(write.key) > MAX_KEY_LENGTH:
            raise LimitExceededError(
                f"{where}: variable name {write.key[:40]!r} must be 1..{MAX_KEY_LENGTH} long",
                limit="MAX_KEY_LENGTH",
                value=MAX_KEY_LENGTH,
            )


def check_inputs(inputs: Sequence[NewMessage], *, where: str) -> None:
    """Refuse more than :data:`MAX_INPUTS_PER_FLOOR` input messages on one floor."""
    if len(inputs) > MAX_INPUTS_PER_FLOOR:
        raise LimitExceededError(
            f"{where}: {len(inputs)} input messages (at most {MAX_INPUTS_PER_FLOOR})",
            limit="MAX_INPUTS_PER_FLOOR",
            value=MAX_INPUTS_PER_FLOOR,
        )
