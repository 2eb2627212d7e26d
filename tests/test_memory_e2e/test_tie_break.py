"""Items of equal value per token are chosen in the ranking's order (newer first), not by
record id: the application's ids are random, so an id tie-break would make the memory block
(and so the prompt) differ between two runs of the same story."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from engine.memory.injection import InjectionMode, InjectionPolicy, select_memories
from tests.test_memory.helpers import T0, count_tokens, record, view


def test_equal_density_prefers_the_newer_record_whatever_the_ids() -> None:
    used = T0 + timedelta(hours=1)
    older = record("a-older", "the red door", key="door.old", floor=3, importance=0.5)
    newer = record("b-newer", "the tan door", key="door.new", floor=8, importance=0.5)
    # Both last used on the same floor and instant: the same decay, so the same score.
    older, newer = (replace(r, last_used_floor=10, last_used_at=used) for r in (older, newer))
    one = select_memories(
        [older],
        [],
        view=view(11),
        now=used,
        message="unrelated words",
        count=count_tokens,
        policy=InjectionPolicy(mode=InjectionMode.IMPORTANCE),
    )
    policy = InjectionPolicy(mode=InjectionMode.IMPORTANCE, max_tokens=one.tokens)
    for records in ([older, newer], [newer, older]):
        chosen = select_memories(
            records,
            [],
            view=view(11),
            now=used,
            message="unrelated words",
            count=count_tokens,
            policy=policy,
        )
        assert chosen.scores["a-older"] == chosen.scores["b-newer"]
        assert chosen.record_ids == ("b-newer",)
