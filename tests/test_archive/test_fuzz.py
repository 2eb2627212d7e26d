"""Fuzzing the archive importer: a damaged document is refused with a FormatError and the
database stays empty; an undamaged-enough one is imported in full. Nothing in between."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import shutil
import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from adapters.storage import SqlStorage, create_engine
from adapters.storage.archive_repo import SqlArchiveRepository
from engine.errors import FormatError
from engine.formats.archive import archive_to_json, parse_archive
from tests.test_archive.scenario import KEY, PLATFORM, build_session
from tests.test_storage.support import _sqlite_template, sqlite_url

NOW = datetime(2026, 1, 1, tzinfo=UTC)
FUZZ_EXAMPLES = int(os.environ.get("TAVERNBOT_FUZZ_EXAMPLES", "60"))


async def _export_scenario(folder: Path) -> dict[str, Any]:
    shutil.copyfile(_sqlite_template(), folder / "tavernbot.db")
    storage = SqlStorage(create_engine(sqlite_url(folder)))
    try:
        await build_session(storage)
        archive = await SqlArchiveRepository(storage).export_session(PLATFORM, KEY, now=NOW)
    finally:
        await storage.close()
    return archive_to_json(archive)


@pytest.fixture(scope="module")
def base_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return asyncio.run(_export_scenario(tmp_path_factory.mktemp("base")))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out.extend(_paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out.extend(_paths(child, (*prefix, index)))
    return out


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["\x00", "x" * 250, "\ud800", "2025-01-01T00:00:00", "main", "failed"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _mutate(doc: dict[str, Any], path: tuple[Any, ...], op: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    if not path:
        return value if isinstance(value, dict) else {"format": value}
    parent: Any = doc
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if op == "delete":
        del parent[last]
    elif op == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[last]))
    else:
        parent[last] = value
    return doc


def _row_counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {
            t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
            for t in tables
            if t != "alembic_version"
        }


async def _try_import(folder: Path, data: bytes) -> str:
    shutil.copyfile(_sqlite_template(), folder / "tavernbot.db")
    storage = SqlStorage(create_engine(sqlite_url(folder)))
    try:
        archive = parse_archive(data, source="fuzz.json")
        await SqlArchiveRepository(storage).import_session(
            archive, platform=PLATFORM, realm_key="r", key="fuzzed"
        )
        again = await SqlArchiveRepository(storage).export_session(PLATFORM, "fuzzed", now=NOW)
        assert len(again.floors) == len(archive.floors)
        assert len(again.messages) == len(archive.messages)
        return "imported"
    except FormatError:
        return "refused"
    finally:
        await storage.close()


@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_malformed_archives_raise_format_error_and_write_nothing(
    base_doc: dict[str, Any], data: st.DataObject
) -> None:
    path = data.draw(st.sampled_from(_paths(base_doc)), label="path")
    op = data.draw(st.sampled_from(["replace", "delete", "duplicate"]), label="op")
    value = data.draw(json_values, label="value")
    mutated = _mutate(base_doc, path, op, value) if path or op == "replace" else base_doc
    raw = json.dumps(mutated, ensure_ascii=True).encode()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        outcome = asyncio.run(_try_import(folder, raw))
        counts = _row_counts(folder / "tavernbot.db")
    event(outcome)
    if outcome == "refused":
        assert all(n == 0 for n in counts.values()), counts
    else:
        assert counts["session"] == 1


@settings(max_examples=40, deadline=None)
@given(blob=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_random_bytes_are_refused_with_format_error(blob: bytes) -> None:
    with pytest.raises(FormatError):
        parse_archive(blob, source="noise.json")
