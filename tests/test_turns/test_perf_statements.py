"""Round trips of a turn: a respond costs a fixed, small number of SQL statements (two units
of work: admit + open + read, then commit), whatever the length of the chat. Counted, not
timed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import event

from adapters.storage import SqlStorage
from engine.timeline.values import Asset
from engine.turns.parsed_assets import ASSET_CACHE_SIZE, ParsedAssets
from engine.turns.service import TavernService
from tests.test_turns.conftest import KEY, line

RESPOND_STATEMENTS = 15
"""SQL statements one respond may run on SQLite (BEGIN included; it ran 28 before the
turn's reads and writes were merged into fewer units of work, 15 before issue 19 read the
closed flag and the speakers' personas through in a read of their own, and the answered
speaker's persona with the turn, so a change made by another process is never missed; 18
before issue 20 stored the page's itemization, one INSERT in the commit's transaction; 19
before the closed flag and the personas were read in the unit of work that opens the floor,
which also knows the answered speaker's persona from that read; 16 before the speakers'
personas were read in the same statement as the session's card and other assets)."""


@contextmanager
def counting(storage: SqlStorage) -> Iterator[list[str]]:
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    target = storage.engine.sync_engine
    event.listen(target, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(target, "before_cursor_execute", count)


async def test_respond_runs_a_fixed_small_number_of_statements(
    service: TavernService, storage: SqlStorage
) -> None:
    for n in range(3):
        await service.respond(KEY, "main", [line(f"warm {n}")])
    with counting(storage) as early:
        await service.respond(KEY, "main", [line("early")])
    for n in range(12):
        await service.respond(KEY, "main", [line(f"more {n}")])
    with counting(storage) as late:
        reply = await service.respond(KEY, "main", [line("late")])
    assert reply.floor == 17
    assert len(early) <= RESPOND_STATEMENTS, early
    assert len(late) == len(early)
    # Admit (closed flag, personas) + open + read, then commit.
    assert sum(s.startswith("BEGIN") for s in late) == 2
    # The personas come with the card (and any other asset) in one read.
    assert sum(s.startswith("SELECT asset.") for s in late) == 1
    # How the prompt was assembled rides on the page's commit: one statement.
    assert sum(s.startswith("INSERT INTO page_itemization") for s in late) == 1


def _asset(updated: datetime, name: str = "card") -> Asset:
    return Asset(
        id=1, realm_id=1, kind="card", name=name, data={}, created_at=updated, updated_at=updated
    )


def test_parsed_assets_reparse_a_changed_asset_and_keep_at_most_the_limit() -> None:
    calls: list[str] = []

    def parse(asset: Asset) -> str:
        calls.append(asset.name)
        return f"parsed {asset.name} {asset.updated_at.second}"

    cache = ParsedAssets()
    now = datetime(2026, 1, 1, tzinfo=UTC)
    first = _asset(now)
    assert cache.get(first, parse) == "parsed card 0"
    assert cache.get(replace(first), parse) == "parsed card 0"
    assert calls == ["card"]  # unchanged: parsed once
    changed = _asset(now + timedelta(seconds=5))
    assert cache.get(changed, parse) == "parsed card 5"
    assert calls == ["card", "card"]
    for n in range(ASSET_CACHE_SIZE + 10):
        cache.get(_asset(now, name=f"a{n}"), parse)
    assert len(cache) == ASSET_CACHE_SIZE
    calls.clear()
    cache.get(_asset(now, name="a0"), parse)  # the oldest entries were dropped
    cache.get(_asset(now, name=f"a{ASSET_CACHE_SIZE + 9}"), parse)  # the newest kept
    assert calls == ["a0"]
