"""What a failed turn leaves: its page (and a floor opened for it) marked failed with a
message safe to show, the ``generation.failed`` event, and the error the caller gets."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from engine.errors import (
    EmptyReplyError,
    EngineError,
    GenerationError,
    InternalError,
    LimitExceededError,
    NotFoundError,
)
from engine.incidents import TURN_FAILED, internal_error, shown_error
from engine.ports import EventSink
from engine.redaction import redact_text
from engine.timeline.errors import BranchBusyError
from engine.timeline.service import TimelineService
from engine.timeline.values import Floor, NewMessage, Page
from engine.turns.errors import TurnFailedError
from engine.turns.events import emit

__all__ = ["TurnFailures", "generation_error", "records_a_failed_floor"]

log = logging.getLogger(__name__)


class TurnFailures:
    """Records failed turns in the timeline."""

    def __init__(self, timeline: TimelineService, *, events: EventSink) -> None:
        self._timeline = timeline
        self._events = events

    async def record_failed_open(
        self, branch_id: int, inputs: Sequence[NewMessage]
    ) -> Floor | None:
        """The failed turn's floor with the user's input (the input is part of the chat
        even though no reply came); without it only if the input itself cannot be stored."""
        for kept in (inputs, ()):
            try:
                return await self._timeline.open_floor(branch_id, kept)
            except EngineError:
                log.exception("could not record the failed turn")
        return None

    async def failed(
        self, floor: Floor | None, page: Page | None, exc: BaseException
    ) -> BaseException:
        """Mark the page (and a new floor) failed; the error to raise to the caller.

        An unexpected error (not an :class:`EngineError`) is logged under an error id here and
        only ``"the turn failed (error <id>)"`` is stored and raised: its own text may hold SQL,
        parameters or credentials.
        """
        incident: InternalError | None = None
        if isinstance(exc, Exception) and not isinstance(exc, EngineError):
            incident = internal_error(exc, TURN_FAILED, logger=log)
        message = generation_error(incident or exc)
        try:
            if page is not None:
                await asyncio.shield(self._timeline.fail_page(page.id, message))
            elif floor is not None and floor.state in ("draft", "generating"):
                await asyncio.shield(self._timeline.fail_floor(floor.id, message))
        except EngineError:
            log.exception("could not mark the turn failed")
        emit(
            self._events,
            "generation.failed",
            floor=floor.seq if floor is not None else None,
            error=message,
        )
        if incident is not None:
            return TurnFailedError(message)
        return exc


def records_a_failed_floor(exc: BaseException) -> bool:
    """Whether a turn that failed with ``exc`` before its floor was opened keeps a failed
    floor as its record (a busy or missing branch, or a refused limit, does not)."""
    return isinstance(exc, Exception) and not isinstance(
        exc, BranchBusyError | NotFoundError | LimitExceededError
    )


def generation_error(exc: BaseException) -> str:
    """What the user is told, and the failed floor keeps, when a generation fails.

    An engine error speaks for itself (URL credentials hidden). Anything else is unexpected
    and may quote SQL, parameters or credentials: it is logged under an error id and only
    ``"the turn failed (error <id>)"`` is said (see :mod:`engine.incidents`). A cancellation
    is named by its type.
    """
    if isinstance(exc, EmptyReplyError):
        return str(exc)
    if isinstance(exc, GenerationError):
        return f"the model call failed: {redact_text(str(exc))}"
    if isinstance(exc, EngineError):
        return redact_text(str(exc))
    if isinstance(exc, Exception):
        return shown_error(exc, TURN_FAILED)
    return type(exc).__name__
