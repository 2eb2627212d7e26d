"""The turn workflow's refusals, each a branch of the engine error tree."""

from __future__ import annotations

from engine.errors import EngineError, InvalidTransitionError


class TurnFailedError(EngineError):
    """A turn failed for a reason that is not a model error (the floor is marked failed)."""


class NothingToDoError(InvalidTransitionError):
    """Regenerate, swipe or continue on a branch that has no reply yet."""
