"""Builders shared by the memory tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import bpe_openai

from engine.memory.lineage import LineageSegment, Viewpoint
from engine.memory.records import (
    MICRO_TIER,
    Lifecycle,
    MemoryKind,
    MemoryRecord,
    MemoryScope,
    MemorySource,
    Provenance,
    estimate_tokens,
    floor_scope_id,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
REALM, SESSION, MAIN = "realm-1", "session-1", "main"
_ENCODING = bpe_openai.get_encoding("cl100k_base")


def count_tokens(text: str) -> int:
    """The prompt tokenizer the tests budget with (cl100k, special tokens as plain text)."""
    return len(_ENCODING.encode_ordinary(text))


def view(floor_no: int, branch: str = MAIN, lineage: tuple[LineageSegment, ...] = ()) -> Viewpoint:
    return Viewpoint(
        realm_id=REALM, session_id=SESSION, branch_id=branch, floor_no=floor_no, lineage=lineage
    )


def record(
    record_id: str,
    text: str,
    *,
    kind: MemoryKind = MemoryKind.FACT,
    key: str | None = None,
    scope: MemoryScope = MemoryScope.CHAT,
    floor: int = 1,
    branch: str = MAIN,
    importance: float = 0.5,
    lifecycle: Lifecycle = Lifecycle.ACTIVE,
    tier: int | None = None,
    created_at: datetime | None = None,
    **extra: Any,
) -> MemoryRecord:
    scope_id = {
        MemoryScope.GLOBAL: REALM,
        MemoryScope.CHAT: SESSION,
        MemoryScope.BRANCH: branch,
        MemoryScope.FLOOR: floor_scope_id(branch, floor),
    }[scope]
    if kind is MemoryKind.SUMMARY and tier is None:
        tier = MICRO_TIER
    if kind is MemoryKind.SUMMARY:
        extra.setdefault("coverage_start", floor)
        extra.setdefault("coverage_end", floor)
    stamp = created_at or T0 + timedelta(minutes=floor)
    return MemoryRecord(
        id=record_id,
        kind=kind,
        scope=scope,
        scope_id=scope_id,
        realm_id=REALM,
        session_id=None if scope is MemoryScope.GLOBAL else SESSION,
        origin_branch=None if scope is MemoryScope.GLOBAL else branch,
        text=text,
        key=key,
        tier=tier,
        importance=importance,
        lifecycle=lifecycle,
        provenance=Provenance(source=MemorySource.MANUAL, floor_no=floor),
        created_at=stamp,
        updated_at=stamp,
        created_floor=floor,
        token_estimate=estimate_tokens(text),
        **extra,
    )
