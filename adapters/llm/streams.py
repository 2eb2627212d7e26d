"""What the offline and the OpenAI streamed replies share: iterate once, then read the result."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from engine.errors import GenerationError
from engine.ports import ChatChunk, ChatResult


class ReplyStream:
    """A streamed reply (:class:`engine.ports.ChatStream`). Subclasses write :meth:`_run`,
    which yields the chunks and sets ``_result`` once the reply is complete."""

    def __init__(self) -> None:
        self._iterator: AsyncIterator[ChatChunk] | None = None
        self._result: ChatResult | None = None
        self._closed = False

    def __aiter__(self) -> AsyncIterator[ChatChunk]:
        if self._iterator is None:
            self._iterator = self._run()
        return self._iterator

    @property
    def result(self) -> ChatResult:
        """The complete reply; raises until iteration has finished."""
        if self._result is None:
            raise GenerationError("the streamed reply was read before the stream finished")
        return self._result

    async def aclose(self) -> None:
        """Stop the stream (safe to call more than once)."""
        self._closed = True
        iterator = self._iterator
        if iterator is not None and hasattr(iterator, "aclose"):
            # RuntimeError: still running in another task; the subclass's own close ends it.
            with contextlib.suppress(RuntimeError):
                await iterator.aclose()

    def _run(self) -> AsyncIterator[ChatChunk]:
        raise NotImplementedError
