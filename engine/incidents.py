"""What a user is shown when something fails, and what goes to the log instead.

The engine's exception tree decides (see :mod:`engine.errors`): an :class:`EngineError` was
raised on purpose and its message is written for a user, so it is shown as it is. Anything
else (a bug, a storage driver error with its SQL and parameters, a library error that may
quote a URL with credentials) is *unexpected*: it is logged in full under a short random
error id, and the user sees only ``"<what> (error 7f3a2c)"``, an :class:`InternalError` with
the same id, so a report from a user can be matched to the log line.
"""

from __future__ import annotations

import logging
import secrets
from typing import Final, TypeVar

from engine.errors import EngineError, InternalError
from engine.redaction import redact_text

ERROR_ID_BYTES: Final = 3
"""Random bytes in an error id (six hex digits): enough to find one line in a day's log."""

log = logging.getLogger("tavernbot.incidents")

E = TypeVar("E", bound=InternalError)

TURN_FAILED: Final = "the turn failed"
"""What a user is told of a turn that failed for an unexpected reason (before its error id)."""


def new_error_id() -> str:
    """A fresh error id (lower-case hex)."""
    return secrets.token_hex(ERROR_ID_BYTES)


def internal_error(
    exc: BaseException,
    what: str,
    *,
    logger: logging.Logger | None = None,
    kind: type[E] = InternalError,  # type: ignore[assignment]
) -> E:
    """Log ``exc`` in full under a new error id; the safe error (of ``kind``) to show instead."""
    error = kind(what, error_id=new_error_id())
    (logger or log).error(
        "%s (error %s): %s: %s",
        what,
        error.error_id,
        type(exc).__name__,
        redact_text(str(exc)),
        exc_info=exc,
    )
    return error


def shown_error(exc: BaseException, what: str, *, logger: logging.Logger | None = None) -> str:
    """The text a user may see for ``exc``: an engine error's own message (URL credentials
    hidden), otherwise ``"<what> (error <id>)"`` with the details logged under that id."""
    if isinstance(exc, EngineError):
        return redact_text(str(exc))
    return str(internal_error(exc, what, logger=logger))


def failure_line(exc: BaseException, what: str, *, logger: logging.Logger | None = None) -> str:
    """One line for a user about a failed action: ``"<What>: <shown error>"``, or the shown
    error alone (capitalised) when it already begins with ``what``."""
    shown = shown_error(exc, what, logger=logger)
    if shown.lower().startswith(what.lower()):
        return shown[:1].upper() + shown[1:]
    return f"{what[:1].upper()}{what[1:]}: {shown}"
