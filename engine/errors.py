"""The root of every error the engine raises on purpose.

Each sub-package defines its own branch of the tree next to the code that raises it, always
rooted here, so a front end can catch :class:`EngineError` and show ``str(exc)`` to a user::

    EngineError
     ├── ConfigurationError        a setting or binding the engine cannot work with
     ├── NotFoundError             a realm, session, branch, floor, page or asset does not exist
     ├── ConflictError             a compare-and-set or uniqueness check lost a race
     ├── InvalidTransitionError    a state machine refused a move (floor states, page activation)
     ├── LimitExceededError        a named limit was reached (the limit's name is in ``limit``)
     ├── FormatError               an imported file is malformed (file, field and problem)
     ├── GenerationError           the model call failed (the floor is marked failed)
     │    └── EmptyReplyError      the model answered with no text to show
     └── InternalError             something failed that nobody planned for; the message is
          └── StorageError         only a short line and an error id, the details were logged
                                   under that id (see :mod:`engine.incidents`)

Adapters translate library exceptions into these at the edge (``raise ... from exc``); the
engine never catches a library exception itself. Whatever is not an :class:`EngineError` by
the time it reaches a user (a bug, a driver error) is shown only as an :class:`InternalError`:
its raw text may hold SQL, parameters or credentials.
"""

from __future__ import annotations


class EngineError(Exception):
    """Base class of all deliberate engine errors; the message is fit to show a user."""


class ConfigurationError(EngineError):
    """A setting, binding or profile the engine cannot work with."""


class UnavailableError(EngineError):
    """A service the bot needs at start-up (the database, a platform API) cannot be reached.

    The message says what failed, where and what to try, in one line.
    """


class NotFoundError(EngineError):
    """Something addressed by id or name does not exist (or is not visible to the caller)."""


class ConflictError(EngineError):
    """A concurrent change won: a compare-and-set or a uniqueness check failed."""


class InvalidTransitionError(EngineError):
    """A state machine refused a transition (for example committing a failed floor)."""


class LimitExceededError(EngineError):
    """A named limit was reached; ``limit`` holds its name and ``value`` the bound."""

    def __init__(self, message: str, *, limit: str, value: int | float) -> None:
        super().__init__(message)
        self.limit = limit
        self.value = value


class FormatError(EngineError):
    """An imported file is malformed; says which file, which field and what is wrong."""

    def __init__(self, problem: str, *, source: str = "", field: str = "") -> None:
        where = ": ".join(part for part in (source, field) if part)
        super().__init__(f"{where}: {problem}" if where else problem)
        self.source = source
        self.field = field
        self.problem = problem


class GenerationError(EngineError):
    """The model call failed; ``retryable`` tells whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class EmptyReplyError(GenerationError):
    """The model's answer has no text to show (empty, only whitespace or tags, only a tool
    call the session did not offer, or a content-filter stop with nothing): the page fails
    with this message, so no reply is left blank, and regenerate retries it."""

    NO_TEXT = "the model returned no text"
    FILTERED = "the model's content filter stopped the reply"

    def __init__(self, *, filtered: bool = False) -> None:
        super().__init__(self.FILTERED if filtered else self.NO_TEXT, retryable=True)
        self.filtered = filtered


class InternalError(EngineError):
    """An unexpected failure, shown as ``"<what> (error <id>)"`` and nothing more.

    The raw exception (SQL, parameters, a traceback) went to the log under ``error_id`` where
    it was caught; :func:`engine.incidents.internal_error` builds these.
    """

    def __init__(self, what: str, *, error_id: str) -> None:
        super().__init__(f"{what} (error {error_id})")
        self.what = what
        self.error_id = error_id


class StorageError(InternalError):
    """The storage backend failed in a way that is neither a conflict nor a missing row."""
