"""The memory package's branch of the engine error tree."""

from __future__ import annotations

from engine.errors import ConfigurationError, ConflictError, InvalidTransitionError


class MemoryPolicyError(ConfigurationError):
    """A memory policy (compaction, expiry, decay, injection, jobs) has an unusable value."""


class MemoryConflictError(ConflictError):
    """A planned lifecycle change met a record that had already changed (apply it again)."""


class JobTransitionError(InvalidTransitionError):
    """The job state machine refused a move (lease held by another owner, dead letter...)."""
