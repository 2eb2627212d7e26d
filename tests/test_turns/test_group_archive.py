"""The native archive carries a group's floors with their speakers and seeds, and an archive
of a solo session is written as before (no speaker or seed keys)."""

from __future__ import annotations

from datetime import UTC, datetime

from adapters.storage import SqlStorage
from adapters.storage.archive_repo import SqlArchiveRepository
from engine.formats.archive import archive_to_bytes, archive_to_json, parse_archive
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.test_turns.conftest import KEY, line
from tests.test_turns.group_support import two_members

NOW = datetime(2026, 1, 1, tzinfo=UTC)


async def test_an_archive_round_trip_keeps_each_floors_speaker_and_seed(
    service: TavernService, storage: SqlStorage
) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("A solo line first.")])
    await two_members(service)
    await service.respond(KEY, MAIN_BRANCH, [line("Bob and Mira, hello.")])
    repo = SqlArchiveRepository(storage)
    doc = archive_to_json(await repo.export_session(KEY.platform, KEY.key, now=NOW))
    floors = doc["floors"]
    assert "speaker" not in floors[0] and "seed" not in floors[0]  # the solo floor
    assert [f.get("speaker") for f in floors[1:]] == ["Bob", "Mira"]
    assert isinstance(floors[1]["seed"], int) and "seed" not in floors[2]
    parsed = parse_archive(
        archive_to_bytes(await repo.export_session(KEY.platform, KEY.key, now=NOW)),
        source="g.json",
    )
    await repo.import_session(parsed, platform=KEY.platform, realm_key="other", key="copy")
    again = archive_to_json(await repo.export_session(KEY.platform, "copy", now=NOW))
    assert again["floors"] == floors
