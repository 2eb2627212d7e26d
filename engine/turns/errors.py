"""The turn workflow's refusals, each a branch of the engine error tree."""

from __future__ import annotations

from engine.errors import EngineError, InvalidTransitionError


class TurnFailedError(EngineError):
    """A turn failed on an unexpected error (not an :class:`~engine.errors.EngineError`): its
    page, and a new floor with it, is marked failed, and the message carries only an error id
    (the details are logged under it, see :mod:`engine.incidents`)."""


class NothingToDoError(InvalidTransitionError):
    """Regenerate, swipe or continue on a branch that has no reply yet."""


class SessionClosedError(InvalidTransitionError):
    """A turn was asked of a session closed with ``close_session`` (``/tavern stop``)."""
