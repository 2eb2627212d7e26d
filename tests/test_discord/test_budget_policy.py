"""The shared edit budget and the reply-policy collector, with a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from adapters.discord.budget import MAX_TRACKED_CHANNELS, EditBudget
from adapters.discord.convert import Place, session_key
from adapters.discord.policy import MAX_PENDING_LINES, Collector
from adapters.discord.tasks import TaskOwner
from engine.turns.api import Speaker, UserLine


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


def _budget(clock: Clock, **kw: float) -> EditBudget:
    params = {"rate_per_s": 10.0, "burst": 3, "channel_interval_s": 1.0, **kw}
    return EditBudget(
        rate_per_s=params["rate_per_s"],
        burst=int(params["burst"]),
        channel_interval_s=params["channel_interval_s"],
        clock=clock,
        sleep=clock.sleep,
    )


def test_one_channel_gets_one_edit_per_interval() -> None:
    clock = Clock()
    budget = _budget(clock)
    waits = [budget.reserve(1) for _ in range(4)]
    assert waits == [0.0, 1.0, 2.0, 3.0]


def test_many_channels_share_the_global_rate_after_the_burst() -> None:
    clock = Clock()
    budget = _budget(clock)
    waits = [budget.reserve(channel) for channel in range(6)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3:] == pytest.approx([0.1, 0.2, 0.3])
    # Every channel gets fewer edits than its own interval would allow.
    assert budget.reserve(0) == pytest.approx(1.0)


async def test_acquire_waits_for_the_slot() -> None:
    clock = Clock()
    budget = _budget(clock)
    for _ in range(3):
        await budget.acquire(7)
    assert clock.now == pytest.approx(102.0)
    assert budget.granted == 3 and budget.waited_s == pytest.approx(2.0)


def test_stale_channels_are_forgotten() -> None:
    clock = Clock()
    budget = _budget(clock, rate_per_s=1e9, burst=10**9)
    for channel in range(MAX_TRACKED_CHANNELS + 2):
        budget.reserve(channel)
    clock.now += 10
    budget.reserve(-1)
    assert len(budget._channel_next) == 1


def test_bad_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="rate > 0"):
        EditBudget(rate_per_s=0, burst=1, channel_interval_s=1)


PLACE = Place(key=session_key(1, 2), branch="main", channel_id=2)


def _line(who: str, text: str, ref: str) -> UserLine:
    return UserLine(speaker=Speaker(id=who, name=who), text=text, ref=ref)


class Recorder:
    def __init__(self) -> None:
        self.floors: list[list[UserLine]] = []

    async def flush(self, place: Place, lines: list[UserLine]) -> None:
        self.floors.append(lines)


async def _settle(tasks: TaskOwner) -> None:
    for _ in range(5):
        await asyncio.sleep(0)
    await tasks.drain(1.0)


async def test_quiet_period_makes_one_floor_of_every_line() -> None:
    tasks, recorder = TaskOwner("t"), Recorder()
    gate = asyncio.Event()

    async def sleep(_: float) -> None:
        await gate.wait()

    collector = Collector(recorder.flush, tasks, sleep=sleep)
    for i, who in enumerate(["ann", "ben", "cat"]):
        collector.add(PLACE, _line(who, f"hi {i}", str(i)), policy="quiet_period", quiet_s=5)
    assert collector.edit(PLACE, "1", "hello again")
    assert recorder.floors == []
    gate.set()
    await _settle(tasks)
    assert [[(ln.speaker.id, ln.text) for ln in f] for f in recorder.floors] == [
        [("ann", "hi 0"), ("ben", "hello again"), ("cat", "hi 2")]
    ]


async def test_mention_policy_waits_for_a_mention() -> None:
    tasks, recorder = TaskOwner("t"), Recorder()
    collector = Collector(recorder.flush, tasks)
    collector.add(PLACE, _line("ann", "a", "1"), policy="mention", quiet_s=0)
    collector.add(PLACE, _line("ben", "b", "2"), policy="mention", quiet_s=0)
    await _settle(tasks)
    assert recorder.floors == []
    assert collector.withdraw(PLACE, "1")
    collector.add(PLACE, _line("cat", "bot?", "3"), policy="mention", quiet_s=0, mentioned=True)
    await _settle(tasks)
    assert [[ln.text for ln in f] for f in recorder.floors] == [["b", "bot?"]]


async def test_pending_lines_are_bounded() -> None:
    tasks, recorder = TaskOwner("t"), Recorder()
    collector = Collector(recorder.flush, tasks)
    for i in range(MAX_PENDING_LINES):
        collector.add(PLACE, _line("ann", str(i), str(i)), policy="quiet_period", quiet_s=60)
    await _settle(tasks)
    assert [len(f) for f in recorder.floors] == [MAX_PENDING_LINES]
    await tasks.close()


async def test_lines_keep_the_order_they_were_sent_in() -> None:
    # Message handlers may finish out of order; message ids say who spoke first.
    tasks, recorder = TaskOwner("t"), Recorder()
    collector = Collector(recorder.flush, tasks)
    for who, ref in (("ben", "20"), ("ann", "10"), ("cat", "30")):
        collector.add(PLACE, _line(who, who, ref), policy="mention", quiet_s=0)
    collector.add(PLACE, _line("eve", "bot?", "15"), policy="mention", quiet_s=0, mentioned=True)
    await _settle(tasks)
    assert [[ln.speaker.id for ln in f] for f in recorder.floors] == [["ann", "eve", "ben", "cat"]]
