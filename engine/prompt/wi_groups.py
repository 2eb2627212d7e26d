"""Inclusion groups: at most one entry of a group activates per scan.

Applied to the candidates of each scan pass, in SillyTavern's order: sticky members win (the rest
of their group drops out), members on cooldown or delay drop out, then group scoring removes
lower-scoring members, then each group keeps one member: a prioritised one (highest ``order``)
or a weighted random pick. A group that already has an activated member activates no other.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from engine.formats.worldbook import WorldEntry


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """An entry taking part in a scan pass; ``key`` is ``"<book>.<uid>"``."""

    key: str
    entry: WorldEntry


def filter_by_groups(
    candidates: list[Candidate],
    *,
    activated: Mapping[str, WorldEntry],
    is_sticky: Callable[[Candidate], bool],
    is_suppressed: Callable[[Candidate], bool],
    score: Callable[[Candidate], int],
    use_scoring: bool,
    rng: random.Random,
) -> list[Candidate]:
    """The candidates left after inclusion-group rules (order kept)."""
    groups: dict[str, list[Candidate]] = {}
    for cand in candidates:
        for name in cand.entry.groups:
            groups.setdefault(name, []).append(cand)
    if not groups:
        return candidates
    removed: set[str] = set()
    sticky_groups: set[str] = set()
    for name, members in groups.items():
        if any(is_sticky(m) for m in members):
            sticky_groups.add(name)
            removed.update(m.key for m in members if not is_sticky(m))
        removed.update(m.key for m in members if is_suppressed(m) and not is_sticky(m))
    for name, members in groups.items():
        if name in sticky_groups:
            continue
        alive = [m for m in members if m.key not in removed]
        if use_scoring or any(m.entry.use_group_scoring for m in alive):
            scores = {m.key: score(m) for m in alive}
            best = max(scores.values(), default=0)
            for m in alive:
                scoring = m.entry.use_group_scoring
                if (use_scoring if scoring is None else scoring) and scores[m.key] < best:
                    removed.add(m.key)
    activated_groups = {e.group for e in activated.values() if e.group}
    for name, members in groups.items():
        if name in sticky_groups:
            continue
        alive = [m for m in members if m.key not in removed]
        if name in activated_groups:
            removed.update(m.key for m in alive)
            continue
        if len(alive) <= 1:
            continue
        winner = _pick(alive, rng)
        removed.update(m.key for m in alive if m.key != winner.key)
    return [c for c in candidates if c.key not in removed]


def _pick(members: Sequence[Candidate], rng: random.Random) -> Candidate:
    prioritised = [m for m in members if m.entry.group_override]
    if prioritised:
        # Highest order wins; the stable sort keeps the first of equal orders.
        return sorted(prioritised, key=lambda m: -m.entry.order)[0]
    total = sum(m.entry.group_weight for m in members)
    roll = rng.random() * total
    cumulative = 0.0
    for member in members:
        cumulative += member.entry.group_weight
        if roll <= cumulative:
            return member
    return members[-1]
