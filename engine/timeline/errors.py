"""The timeline's refusals, each a branch of the engine error tree."""

from __future__ import annotations

from engine.errors import ConflictError, EngineError, InvalidTransitionError, NotFoundError


class TimelineNotFoundError(NotFoundError):
    """A session, branch, floor or page does not exist."""


class FloorTransitionError(InvalidTransitionError):
    """A floor cannot move from its state to the requested one."""


class PageTransitionError(InvalidTransitionError):
    """A page cannot be committed, failed, added or activated in its current situation."""


class StaleStateError(ConflictError):
    """A compare-and-set lost: someone else changed the floor or page first."""


class BranchBusyError(ConflictError):
    """The branch already has a floor or page in progress (one generation per branch)."""


class DuplicateNameError(ConflictError):
    """A branch, session or asset with this name already exists."""


class InvalidNameError(EngineError):
    """A branch, session or asset name is empty, or an asset kind is not one of the kinds."""
