"""Native archive round trip: export -> import into a fresh database -> export again."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.storage import SqlStorage
from adapters.storage.archive_repo import SqlArchiveRepository
from engine.errors import ConflictError
from engine.formats.archive import archive_to_bytes, archive_to_json, parse_archive
from engine.variables.service import VariableService
from tests.test_archive.scenario import KEY, PLATFORM, REALM, build_session
from tests.test_storage.support import open_test_storage

NOW = datetime(2026, 1, 1, tzinfo=UTC)
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@asynccontextmanager
async def fresh(request: pytest.FixtureRequest, tmp: Path) -> AsyncIterator[SqlStorage]:
    """A fresh migrated database of the test's backend inside ``tmp``."""
    os.makedirs(tmp, exist_ok=True)
    kind = request.param  # type: ignore[attr-defined]
    pg_url = request.getfixturevalue("pg_url") if kind == "postgres" else None
    async with open_test_storage(kind, tmp_path=tmp, pg_url=pg_url) as storage:
        yield storage


def _doc(archive: Any) -> dict[str, Any]:
    doc = archive_to_json(archive)
    doc.pop("exported_at")  # the one field that always differs
    return doc


async def _states(storage: SqlStorage, session_id: int) -> dict[str, Any]:
    variables = VariableService(storage)
    out: dict[str, Any] = {}
    async with storage.read() as uow:
        branches = await uow.branches.list(session_id)
    for branch in branches:
        state = await variables.state(branch.id)
        out[branch.name] = state.merged()
        out[f"{branch.name}@1"] = (await variables.state(branch.id, floor=1)).merged()
        out[f"{branch.name}:b"] = [
            (h.scope, h.value, h.deleted, h.branch, h.floor, h.page)
            for h in await variables.history(branch.id, "b")
        ]
    return out


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> pytest.FixtureRequest:
    return request


async def test_round_trip_is_lossless(backend: pytest.FixtureRequest, tmp_path: Path) -> None:
    async with fresh(backend, tmp_path / "one") as first:
        session_id = await build_session(first)
        exported = await SqlArchiveRepository(first).export_session(PLATFORM, KEY, now=NOW)
        states_before = await _states(first, session_id)
    data = archive_to_bytes(exported)
    parsed = parse_archive(data, source="chan.tavern.json")
    assert archive_to_json(parsed) == archive_to_json(exported)

    doc = archive_to_json(exported)
    # The scenario really exercised what the archive must carry.
    assert {b["name"] for b in doc["branches"]} == {"main", "alt"}
    assert any(f["state"] == "failed" and f["error"] for f in doc["floors"])
    assert any(f["hidden"] for f in doc["floors"])
    assert len([p for p in doc["pages"] if p["floor"] == 1]) == 2
    assert {e["scope"] for e in doc["variable_log"]} == {
        "page",
        "floor",
        "branch",
        "chat",
        "global",
    }
    assert {v["scope"] for v in doc["variable_values"]} == {
        "page",
        "floor",
        "branch",
        "chat",
        "global",
    }
    assert {a["name"] for a in doc["assets"]} == {"Sera", "P", "W", "R"}
    assert len(doc["memory"]["records"]) == 3 and len(doc["memory"]["relations"]) == 1
    assert doc["snapshots"] and doc["links"]

    async with fresh(backend, tmp_path / "two") as second:
        repo = SqlArchiveRepository(second)
        result = await repo.import_session(parsed, platform=PLATFORM, realm_key=REALM, key=KEY)
        again = await repo.export_session(PLATFORM, KEY, now=NOW)
        assert _doc(again) == _doc(exported)
        assert await _states(second, result.session_id) == states_before
        # Importing the same archive again under the same key is refused, and writes nothing.
        with pytest.raises(ConflictError):
            await repo.import_session(parsed, platform=PLATFORM, realm_key=REALM, key=KEY)
        assert _doc(await repo.export_session(PLATFORM, KEY, now=NOW)) == _doc(exported)


async def test_import_never_touches_existing_data(
    backend: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with fresh(backend, tmp_path / "one") as storage:
        await build_session(storage)
        repo = SqlArchiveRepository(storage)
        original = await repo.export_session(PLATFORM, KEY, now=NOW)
        async with storage.unit_of_work() as uow:
            realm = await uow.realms.find(PLATFORM, REALM)
            assert realm is not None
            await uow.assets.put(realm_id=realm.id, kind="preset", name="P", data={"other": 1})
        result = await repo.import_session(
            original, platform=PLATFORM, realm_key=REALM, key="copy"
        )
        copy = await repo.export_session(PLATFORM, "copy", now=NOW)
        after = await repo.export_session(PLATFORM, KEY, now=NOW)
    # The changed preset was kept and the copy got its own, renamed one.
    assert result.renamed_assets == {("preset", "P"): "P (2)"}
    assert copy.session.settings["preset"] == "P (2)"
    assert {a.name: a.data for a in copy.assets}["P (2)"] == {"temperature": 1}
    # Global values the realm already had were left alone.
    assert set(result.kept_globals) == {"g", "g_before"}
    # The original session is unchanged (apart from the preset changed above).
    before_doc, after_doc = _doc(original), _doc(after)
    before_doc.pop("assets"), after_doc.pop("assets")
    assert after_doc == before_doc
    assert json.dumps(_doc(copy)["floors"]) == json.dumps(before_doc["floors"])


async def test_a_failure_midway_leaves_nothing_behind(
    backend: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adapters.storage import archive_repo

    async with fresh(backend, tmp_path / "one") as storage:
        await build_session(storage)
        repo = SqlArchiveRepository(storage)
        original = await repo.export_session(PLATFORM, KEY, now=NOW)
        counts_before = await _counts(storage)

        async def explode(*args: object, **kwargs: object) -> None:
            raise RuntimeError("disk on fire")

        # Memory is written last: by then every other row of the copy has been inserted.
        monkeypatch.setattr(archive_repo._Importer, "_memory", explode)
        with pytest.raises(RuntimeError, match="disk on fire"):
            await repo.import_session(original, platform=PLATFORM, realm_key="new", key="copy")
        async with storage.read() as uow:
            assert await uow.sessions.find(PLATFORM, "copy") is None
            assert await uow.realms.find(PLATFORM, "new") is None
        assert await _counts(storage) == counts_before
        again = await repo.export_session(PLATFORM, KEY, now=NOW)
        assert _doc(again) == _doc(original)


async def _counts(storage: SqlStorage) -> dict[str, int]:
    from sqlalchemy import func, select

    from adapters.storage.models import Base

    out: dict[str, int] = {}
    async with storage.read() as uow:
        for name, table in Base.metadata.tables.items():
            out[name] = (
                await uow.db.execute(select(func.count()).select_from(table))
            ).scalar_one()
    return out
