"""Owned background tasks: every task the adapter starts is kept here and ended on close."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
_log = logging.getLogger(__name__)


class TaskOwner:
    """A set of running tasks; failures are logged and counted, close() cancels the rest."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._tasks: set[asyncio.Task[Any]] = set()
        self.failures: list[BaseException] = []
        self.closed = False

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
        """Run ``coro`` as an owned task."""
        if self.closed:
            coro.close()
            raise RuntimeError(f"{self.name}: cannot start {name!r} after close()")
        task = asyncio.get_running_loop().create_task(coro, name=f"{self.name}:{name}")
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            assert exc is not None
            self.failures.append(exc)
            _log.error("task %s failed", task.get_name(), exc_info=exc)

    @property
    def running(self) -> int:
        """How many owned tasks are still running."""
        return len(self._tasks)

    async def drain(self, grace_s: float) -> None:
        """Wait (up to ``grace_s``) for the running tasks to end by themselves."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=grace_s)

    async def close(self) -> None:
        """Cancel every running task and wait for them."""
        self.closed = True
        tasks = set(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
