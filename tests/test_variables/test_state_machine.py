"""Random open/commit/fail/regenerate/swipe/fork/explicit-write sequences: the state read from
storage always equals a naive in-memory model that replays the active lineage from scratch."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from adapters.storage import SqlStorage
from engine.timeline.values import NewMessage
from engine.variables.values import Mutation
from tests.test_storage.support import World, open_test_storage

MAX_BRANCHES = 4
_keys = st.sampled_from(["a", "b", "c"])
_values = st.one_of(st.none(), st.integers(0, 5))  # None: delete
_write = st.tuples(
    st.sampled_from(["branch", "branch", "floor", "page", "chat", "global"]), _keys, _values
)
_writes = st.lists(_write, max_size=4)
_counter = itertools.count()


def _mutations(writes: list[tuple[str, str, int | None]]) -> list[Mutation]:
    return [
        Mutation.delete(scope, key) if value is None else Mutation.set(scope, key, value)  # type: ignore[arg-type]
        for scope, key, value in writes
    ]


def _apply(state: dict[str, Any], writes: list[tuple[str, str, int | None]], scope: str) -> None:
    for s, key, value in writes:
        if s != scope:
            continue
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value


@dataclass
class MFloor:
    id: int
    pages: dict[int, list[tuple[str, str, int | None]]] = field(default_factory=dict)
    active: int = 1


@dataclass
class MBranch:
    id: int
    parent: MBranch | None
    fork_floor: int
    fork_page: int | None
    floors: dict[int, MFloor] = field(default_factory=dict)  # own committed floors by seq
    failed: dict[int, int] = field(default_factory=dict)  # own failed floors: seq -> id
    explicit: dict[int, list[tuple[str, str, int | None]]] = field(default_factory=dict)

    def head(self) -> int:
        return max(self.floors, default=self.fork_floor)

    def next(self) -> int:
        """The number of the next floor: failed floors keep theirs (issue 12)."""
        return max([*self.floors, *self.failed], default=self.fork_floor) + 1

    def source(self, seq: int) -> tuple[MFloor, int] | None:
        """The floor the branch sees at ``seq`` and the page it sees active there (None: a
        failed floor, which has no page)."""
        if self.parent is None or seq > self.fork_floor:
            floor = self.floors.get(seq)
            return None if floor is None else (floor, floor.active)
        seen = self.parent.source(seq)
        if seen is None:
            return None
        floor, page = seen
        return floor, (self.fork_page or page) if seq == self.fork_floor else page

    def explicit_at(self, seq: int) -> list[tuple[str, str, int | None]]:
        """Explicit writes positioned before floor ``seq`` that this branch sees."""
        if self.parent is None or seq > self.fork_floor:
            return self.explicit.get(seq, [])
        return self.parent.explicit_at(seq)

    def floor_scope(self, seq: int) -> dict[str, Any]:
        """Floor ``seq``'s floor scope: explicit floor writes, then its active page's."""
        state: dict[str, Any] = {}
        _apply(state, self.explicit_at(seq), "floor")
        seen = self.source(seq)
        if seen is None:
            return {}  # a failed floor has no floor scope to read
        floor, page = seen
        _apply(state, floor.pages[page], "floor")
        return state

    def page_scope(self, seq: int) -> dict[str, Any]:
        """The page scope of the page this branch sees active on floor ``seq``."""
        state: dict[str, Any] = {}
        seen = self.source(seq)
        if seen is None:
            return {}
        floor, page = seen
        _apply(state, floor.pages[page], "page")
        return state

    def state(self, upto: int, *, head: bool = False) -> dict[str, Any]:
        state: dict[str, Any] = {}
        for seq in range(1, upto + 1):
            _apply(state, self.explicit_at(seq), "branch")
            seen = self.source(seq)
            if seen is not None:
                floor, page = seen
                _apply(state, floor.pages[page], "branch")
        if head:
            for seq in range(upto + 1, self.next() + 1):
                _apply(state, self.explicit.get(seq, []), "branch")
        return state


def make_machine(loop: asyncio.AbstractEventLoop, storage: SqlStorage) -> type:
    class TimelineMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.world = World(storage)
            self.run = loop.run_until_complete
            n = next(_counter)  # a realm of its own: the global scope is per realm
            opened = self.run(self.world.session(f"sm-{n}", realm=f"realm-{n}"))
            self.branches = [MBranch(id=opened.main.id, parent=None, fork_floor=0, fork_page=None)]
            self.chat: dict[str, Any] = {}
            self.global_: dict[str, Any] = {}

        def pick(self, index: int) -> MBranch:
            return self.branches[index % len(self.branches)]

        def check(self, branch: MBranch) -> None:
            state = self.run(self.world.variables.state(branch.id))
            assert state.branch == branch.state(branch.head(), head=True)
            assert state.chat == self.chat
            assert state.global_ == self.global_
            head = branch.head()
            assert state.floor == (branch.floor_scope(head) if head else {})
            assert state.page == (branch.page_scope(head) if head else {})
            assert self.run(self.world.timeline.head(branch.id)) == branch.head()

        def shared(self, writes: list[tuple[str, str, int | None]]) -> None:
            _apply(self.chat, writes, "chat")
            _apply(self.global_, writes, "global")

        @rule(b=st.integers(0, 99), writes=_writes, fail=st.booleans())
        def turn(self, b: int, writes: list[Any], fail: bool) -> None:
            branch = self.pick(b)
            tl = self.world.timeline
            floor = self.run(tl.open_floor(branch.id, [NewMessage(role="user", raw="hi")]))
            assert floor.seq == branch.next()
            self.run(tl.start_generating(floor.id))
            page = self.run(tl.add_page(floor.id))
            if fail:
                self.run(tl.fail_page(page.id, "model failed"))
                branch.failed[floor.seq] = floor.id
            else:
                self.run(tl.commit_page(page.id, writes=_mutations(writes)))
                branch.floors[floor.seq] = MFloor(id=floor.id, pages={1: writes})
                self.shared(writes)
            self.check(branch)

        @rule(b=st.integers(0, 99), writes=_writes, commit=st.booleans())
        def regenerate(self, b: int, writes: list[Any], commit: bool) -> None:
            branch = self.pick(b)
            newest = branch.next() - 1
            if newest in branch.failed:  # a retry of the failed floor, in place
                floor_id = branch.failed[newest]
                page = self.run(self.world.timeline.add_page(floor_id))
                if commit:
                    self.run(self.world.timeline.commit_page(page.id, writes=_mutations(writes)))
                    del branch.failed[newest]
                    branch.floors[newest] = MFloor(
                        id=floor_id, pages={page.number: writes}, active=page.number
                    )
                    self.shared(writes)
                else:
                    self.run(self.world.timeline.fail_page(page.id, "model failed"))
                self.check(branch)
                return
            if not branch.floors:
                return
            seq = max(branch.floors)
            floor = branch.floors[seq]
            page = self.run(self.world.timeline.add_page(floor.id))
            if commit:
                self.run(self.world.timeline.commit_page(page.id, writes=_mutations(writes)))
                floor.pages[page.number] = writes
                floor.active = page.number
                self.shared(writes)
            else:
                self.run(self.world.timeline.fail_page(page.id, "model failed"))
            self.check(branch)

        @rule(b=st.integers(0, 99), pick=st.integers(0, 99))
        def swipe(self, b: int, pick: int) -> None:
            branch = self.pick(b)
            if not branch.floors:
                return
            floor = branch.floors[max(branch.floors)]
            number = sorted(floor.pages)[pick % len(floor.pages)]
            self.run(self.world.timeline.activate_page(floor.id, number))
            floor.active = number
            self.check(branch)

        @rule(b=st.integers(0, 99), after=st.integers(0, 99))
        def fork(self, b: int, after: int) -> None:
            if len(self.branches) >= MAX_BRANCHES:
                return
            branch = self.pick(b)
            at = after % (branch.head() + 1)
            created = self.run(
                self.world.timeline.fork(branch.id, name=f"b{len(self.branches)}", after_floor=at)
            )
            seen = branch.source(at) if at else None
            page = seen[1] if seen is not None else None
            self.branches.append(
                MBranch(id=created.id, parent=branch, fork_floor=at, fork_page=page)
            )
            self.check(self.branches[-1])

        @rule(
            b=st.integers(0, 99),
            scope=st.sampled_from(["branch", "branch", "floor", "chat", "global"]),
            key=_keys,
            value=_values,
        )
        def explicit(self, b: int, scope: str, key: str, value: int | None) -> None:
            branch = self.pick(b)
            if value is None:
                self.run(self.world.variables.delete(branch.id, scope, key))  # type: ignore[arg-type]
            else:
                self.run(self.world.variables.set(branch.id, scope, key, value))  # type: ignore[arg-type]
            if scope in ("chat", "global"):
                self.shared([(scope, key, value)])
            else:  # positioned before the branch's next floor
                branch.explicit.setdefault(branch.next(), []).append((scope, key, value))
            self.check(branch)

        @rule(b=st.integers(0, 99), at=st.integers(0, 99))
        def read_at_floor(self, b: int, at: int) -> None:
            branch = self.pick(b)
            seq = at % (branch.head() + 1)
            state = self.run(self.world.variables.state(branch.id, floor=seq))
            assert state.branch == branch.state(seq)
            assert state.floor == (branch.floor_scope(seq) if seq else {})
            assert state.page == (branch.page_scope(seq) if seq else {})

    return TimelineMachine


def _run(kind: str, tmp_path: Path, pg_url: str | None, examples: int) -> None:
    loop = asyncio.new_event_loop()
    try:
        manager = open_test_storage(kind, tmp_path=tmp_path, pg_url=pg_url)
        storage = loop.run_until_complete(manager.__aenter__())
        try:
            machine: Callable[[], RuleBasedStateMachine] = make_machine(loop, storage)
            run_state_machine_as_test(
                machine,
                settings=settings(
                    max_examples=examples,
                    stateful_step_count=15,
                    deadline=None,
                    suppress_health_check=[HealthCheck.too_slow],
                    database=None,
                ),
            )
        finally:
            loop.run_until_complete(manager.__aexit__(None, None, None))
    finally:
        loop.close()


def test_storage_matches_a_naive_replay_on_sqlite(tmp_path: Path) -> None:
    _run("sqlite", tmp_path, None, examples=30)


@pytest.mark.postgres
def test_storage_matches_a_naive_replay_on_postgres(tmp_path: Path, pg_url: str) -> None:
    _run("postgres", tmp_path, pg_url, examples=10)
