"""A start whose first tick comes late (the event loop busy with the rest of start-up) runs
that tick and logs no APScheduler "missed by" warning (issue 16)."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta

import pytest

from engine.memory.jobs import JobStatus, JobType
from tests.test_scheduler.conftest import World
from tests.test_scheduler.test_lifecycle import KEY, _twelve_micros

BUSY_START_S = 1.5
"""How long the loop stays blocked after ``start``: past APScheduler's default one-second
grace for a late run, so today's code would skip the first tick and warn."""


async def test_a_late_first_tick_runs_without_a_warning(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    scheduler = world.scheduler(tick_interval=timedelta(hours=1))  # the first tick only
    await _twelve_micros(world, scheduler)
    compacted = asyncio.Event()
    world.events.emit = lambda event: (  # type: ignore[method-assign]
        world.events.events.append(event),
        compacted.set() if event.name == "memory.compacted" else None,
    )
    caplog.set_level(logging.INFO, logger="apscheduler")
    await scheduler.start()
    time.sleep(BUSY_START_S)  # noqa: ASYNC251 -- on purpose: start-up work that blocks the loop
    await asyncio.wait_for(compacted.wait(), timeout=30)
    await scheduler.shutdown()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [], [r.getMessage() for r in warnings]
    done = await world.repo.load_job(JobType.COMPACT, KEY)
    assert done is not None and done.status is JobStatus.SUCCEEDED
