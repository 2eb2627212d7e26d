"""Decay, expiry and every compaction trigger, run by the scheduler's ticks on SQLite."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from engine.memory.compaction import CompactionPolicy
from engine.memory.decay import DecayPolicy, HalfLife
from engine.memory.jobs import JobStatus, JobType
from engine.memory.ports import MemoryQuery
from engine.memory.records import MACRO_TIER, Lifecycle, MemoryKind, MemoryScope
from engine.memory.service import MemorySettings
from engine.memory.worker import JobOutcomeKind
from tests.test_memory.helpers import MAIN, REALM, SESSION, T0, record, view
from tests.test_scheduler.conftest import World

BRANCH_KEY = f"{REALM}/{SESSION}/branch:{MAIN}"


async def _commit(world: World, service, floor: int, text: str | None = None) -> None:
    await service.after_commit(
        view(floor),
        user_text=f"floor {floor}",
        reply_text="ok",
        tag_summaries=[text or f"Something happened on floor {floor}."],
        run_agent=False,
    )


async def _summaries(world: World, tier: int | None = None):
    found = await world.repo.query_records(
        MemoryQuery(realm_id=REALM, kinds=frozenset({MemoryKind.SUMMARY}))
    )
    return [s for s in found if tier is None or s.tier == tier]


def _compactions(world: World) -> list[str]:
    return [e.payload["trigger"] for e in world.events.named("memory.compacted")]


async def test_count_trigger_compacts_at_the_twelfth_micro_keeping_four(world: World) -> None:
    scheduler = world.scheduler()
    service = scheduler.service
    for floor in range(1, 13):
        await _commit(world, service, floor)
        await scheduler.tick()
        if floor < 12:
            assert _compactions(world) == []
    assert _compactions(world) == ["count"]
    (macro,) = await _summaries(world, MACRO_TIER)
    assert (macro.coverage_start, macro.coverage_end) == (1, 8)
    assert [m.created_floor for m in await _summaries(world, 1)] == [9, 10, 11, 12]
    state = await world.repo.load_job(JobType.COMPACT, BRANCH_KEY)
    assert state is not None and state.status is JobStatus.SUCCEEDED
    # The next commit asks for a run again; nothing is due, so nothing is compacted.
    await _commit(world, service, 13)
    outcomes = {o.state.job_type: o.kind for o in await scheduler.tick() if o.state}
    assert outcomes[JobType.COMPACT] is JobOutcomeKind.RAN
    assert _compactions(world) == ["count"]


async def test_token_trigger(world: World) -> None:
    settings = MemorySettings(compaction=CompactionPolicy(keep_newest=1, min_sources=2))
    scheduler = world.scheduler(settings)
    for floor in (1, 2):
        await _commit(world, scheduler.service, floor, "word " * 400)  # 500 tokens each
        await scheduler.tick()
    assert _compactions(world) == []  # 1000 tokens, but one source after keeping the newest
    await _commit(world, scheduler.service, 3, "word " * 400)
    await scheduler.tick()
    assert _compactions(world) == ["tokens"]


async def test_floor_gap_trigger_uses_the_branch_head(world: World) -> None:
    settings = MemorySettings(compaction=CompactionPolicy(keep_newest=1, min_sources=2))
    scheduler = world.scheduler(settings)
    for floor in (1, 2, 3):
        await _commit(world, scheduler.service, floor)
    world.heads[MAIN] = 11  # the branch head: 11 floors since before the first micro
    await scheduler.tick()
    assert _compactions(world) == []
    await _commit(world, scheduler.service, 4)
    world.heads[MAIN] = 12
    await scheduler.tick()
    assert _compactions(world) == ["floor_gap"]
    (macro,) = await _summaries(world, MACRO_TIER)
    assert (macro.coverage_start, macro.coverage_end) == (1, 3)


async def test_macros_fold_into_a_higher_tier(world: World) -> None:
    macros = [
        replace(
            record(f"x{i}", f"Chapter {i}.", kind=MemoryKind.SUMMARY, floor=i * 10, tier=2),
            scope=MemoryScope.BRANCH,
            scope_id=MAIN,
            coverage_start=i * 10 - 9,
        )
        for i in range(1, 7)
    ]
    await world.repo.add_records(macros)
    scheduler = world.scheduler()
    await _commit(world, scheduler.service, 61)
    await scheduler.tick()
    assert _compactions(world) == ["fold"]
    (tier3,) = await _summaries(world, 3)
    assert (tier3.coverage_start, tier3.coverage_end) == (1, 40)
    assert world.summaries[-1].texts == tuple(f"Chapter {i}." for i in range(1, 5))


async def test_decay_forgets_faded_facts_and_runs_hourly(world: World) -> None:
    settings = MemorySettings(
        decay=DecayPolicy(
            fact=HalfLife(floors=10, time=timedelta(0)),
            open_loop=HalfLife(floors=10, time=timedelta(0)),
        )
    )
    await world.repo.add_records(
        [
            record("faint", "a passing remark", key="remark", importance=0.1, floor=1),
            record("strong", "the crown is lost", key="crown", importance=0.9, floor=1),
        ]
    )
    scheduler = world.scheduler(settings)
    await _commit(world, scheduler.service, 2)
    world.heads[MAIN] = 60  # 59 floors at a 10-floor half-life: 0.1 x 0.017 < 0.01
    outcomes = {o.state.job_type: o.kind for o in await scheduler.tick() if o.state}
    assert outcomes[JobType.DECAY] is JobOutcomeKind.RAN
    faint, strong = await world.repo.get_records(["faint", "strong"])
    assert faint.lifecycle is Lifecycle.DEPRECATED and strong.lifecycle is Lifecycle.ACTIVE
    assert world.events.named("memory.decayed")[0].payload["deprecated"] == ["faint"]
    state = await world.repo.load_job(JobType.DECAY, BRANCH_KEY)
    assert state is not None and state.next_run_at == world.clock.now() + timedelta(hours=1)
    assert not [o for o in await scheduler.tick() if o.kind is JobOutcomeKind.RAN]
    world.clock.advance(hours=1)
    ran = [o.state.job_type for o in await scheduler.tick() if o.kind is JobOutcomeKind.RAN]
    assert sorted(ran) == [JobType.DECAY, JobType.EXPIRY]


async def test_expiry_deprecates_old_micros_and_loops_never_macros(world: World) -> None:
    old = [
        record("micro", "an old micro", kind=MemoryKind.SUMMARY, floor=1, created_at=T0),
        record("macro", "an old macro", kind=MemoryKind.SUMMARY, floor=1, tier=2, created_at=T0),
        record("loop", "an old loop", kind=MemoryKind.OPEN_LOOP, floor=1, created_at=T0),
        record("fact", "an old fact", key="k", floor=1, created_at=T0),
    ]
    await world.repo.add_records(old)
    scheduler = world.scheduler()
    world.clock.advance(days=8)
    await _commit(world, scheduler.service, 2)  # creates the realm's expiry job
    await scheduler.tick()
    states = {r.id: r.lifecycle for r in await world.repo.get_records(["micro", "macro", "loop"])}
    assert states == {
        "micro": Lifecycle.ACTIVE,
        "macro": Lifecycle.ACTIVE,
        "loop": Lifecycle.DEPRECATED,
    }
    world.clock.advance(days=23)  # 31 days: the micro expires too
    await scheduler.tick()
    lifecycles = {r.id: r.lifecycle for r in await world.repo.get_records(["micro", "macro"])}
    assert lifecycles == {"micro": Lifecycle.DEPRECATED, "macro": Lifecycle.ACTIVE}
    world.clock.advance(days=91)  # deprecated for 90 days: purged; the macro stays for good
    await scheduler.tick()
    remaining = {r.id for r in await world.repo.get_records([r.id for r in old])}
    assert remaining == {"macro", "fact"}
    expired = world.events.named("memory.expired")
    assert [e.payload["deprecated"] for e in expired][:2] == [["loop"], ["micro"]]
    assert set(expired[-1].payload["purged"]) >= {"micro", "loop"}
