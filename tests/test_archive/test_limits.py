"""Every named limit of the archive format, and the validation messages (file, field, problem)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.storage.archive_repo import SqlArchiveRepository
from engine.errors import ConflictError, FormatError, LimitExceededError
from engine.formats import archive, archive_fields, archive_memory, archive_st
from engine.formats.archive import archive_to_json, looks_like_archive, parse_archive
from engine.formats.archive_st import archive_from_st_chat
from engine.formats.st_chat import ChatEntry, ChatLog, ChatPage
from tests.test_storage.support import open_test_storage

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def small_doc() -> dict[str, Any]:
    log = ChatLog(
        user_name="U",
        character_name="C",
        entries=(
            ChatEntry(name="U", is_user=True, text="hi"),
            ChatEntry(
                name="C",
                is_user=False,
                text="b",
                swipes=(ChatPage(text="a"), ChatPage(text="b")),
                swipe_id=1,
            ),
        ),
    )
    return archive_to_json(archive_from_st_chat(log, now=NOW, source="c.jsonl"))


def memory_record() -> dict[str, Any]:
    return {
        "kind": "fact",
        "scope": "branch",
        "scope_branch": 0,
        "scope_floor": None,
        "origin_branch": 0,
        "text": "t",
        "provenance": {"source": "manual", "floor_no": 1, "message_ref": None, "job_id": None},
        "created_at": NOW.isoformat(),
        "created_floor": 1,
        "key": None,
        "tier": None,
        "importance": 0.5,
        "confidence": 1.0,
        "lifecycle": "active",
        "updated_at": None,
        "last_used_at": None,
        "last_used_floor": None,
        "coverage_start": None,
        "coverage_end": None,
        "ended_branch": None,
        "ended_floor": None,
        "token_estimate": 1,
        "flags": [],
    }


def refused(doc: Any) -> FormatError:
    with pytest.raises(FormatError) as info:
        parse_archive(json.dumps(doc), source="a.json")
    assert str(info.value).startswith("a.json: ")
    return info.value


def test_small_doc_is_valid_and_sniffed() -> None:
    doc = small_doc()
    parsed = parse_archive(json.dumps(doc), source="a.json")
    assert [p.number for p in parsed.pages] == [1, 2]
    assert parsed.floors[0].active_page == 2
    assert looks_like_archive(json.dumps(doc).encode())
    assert not looks_like_archive(b'{"user_name": "u", "character_name": "c"}\n{"mes": "x"}')
    # A chat that merely talks about archives is still a chat.
    chat = {"name": "a", "mes": '{"format": "tavernbot-archive"}'}
    assert not looks_like_archive(b'{"user_name": "u"}\n' + json.dumps(chat).encode())
    # Only the first SNIFF_BYTES are looked at.
    padded = b"{" + b" " * archive.SNIFF_BYTES + json.dumps(doc).encode()[1:]
    assert not looks_like_archive(padded)
    parse_archive(padded, source="padded.json")


def test_format_and_version() -> None:
    doc = small_doc()
    assert refused({**doc, "format": "other"}).field == "format"
    error = refused({**doc, "version": 2})
    assert error.field == "version" and "not supported" in error.problem


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["floors"][0].update(branch=1), "floors[0].branch"),
        (lambda d: d["floors"][0].update(active_page=7), "floors[0].active_page"),
        (lambda d: d["floors"][0].update(state="exploded"), "floors[0].state"),
        (lambda d: d["floors"][0].pop("hidden"), "floors[0].hidden"),
        (lambda d: d["messages"][0].update(created_at="yesterday"), "messages[0].created_at"),
        (
            lambda d: d["messages"][0].update(created_at="2025-01-01T00:00"),
            "messages[0].created_at",
        ),
        (lambda d: d["branches"][0].update(parent=0, fork_floor=0), "branches[0].parent"),
        (lambda d: d["branches"].append(copy.deepcopy(d["branches"][0])), "branches[1]"),
        (lambda d: d["pages"].append(copy.deepcopy(d["pages"][0])), "pages[2]"),
        (lambda d: d["floors"].append(copy.deepcopy(d["floors"][0])), "floors[1]"),
        (lambda d: d["messages"][1].update(page=None, floor=5), "messages[1].floor"),
        (
            lambda d: d["variable_values"].append(
                {"scope": "chat", "owner": 0, "key": "k", "value": 1}
            ),
            "variable_values[0].owner",
        ),
        (
            lambda d: d["session"]["settings"].update(worldbooks=[3]),
            "session.settings.worldbooks[0]",
        ),
        (
            lambda d: d["memory"]["records"].append({**memory_record(), "scope_branch": None}),
            "memory.records[0].scope_branch",
        ),
        (
            lambda d: d["memory"]["relations"].append(
                {
                    "source": 0,
                    "target": 0,
                    "kind": "updates",
                    "created_at": NOW.isoformat(),
                    "floor_no": 1,
                    "note": "",
                }
            ),
            "memory.relations[0].source",
        ),
    ],
)
def test_bad_fields_are_named(change: Any, field: str) -> None:
    doc = small_doc()
    change(doc)
    assert refused(doc).field.startswith(field)


def test_text_limits() -> None:
    doc = small_doc()
    doc["messages"][0]["speaker_name"] = "x" * (archive_fields.MAX_SHORT_TEXT + 1)
    assert "over 200" in refused(doc).problem
    doc = small_doc()
    doc["messages"][0]["raw"] = "a\x00b"
    assert "NUL" in refused(doc).problem
    doc = small_doc()
    doc["messages"][0]["raw"] = "x" * (archive_fields.MAX_LONG_TEXT + 1)
    assert refused(doc).field == "messages[0].raw"
    doc = small_doc()
    doc["messages"][0]["raw"] = "x" * archive_fields.MAX_LONG_TEXT
    parse_archive(doc, source="a.json")


def test_integer_and_depth_limits() -> None:
    doc = small_doc()
    doc["floors"][0]["seq"] = archive_fields.MAX_INT + 1
    assert "at most" in refused(doc).problem
    doc["floors"][0]["seq"] = archive_fields.MAX_INT
    parse_archive(doc, source="a.json")
    deep: Any = 1
    for _ in range(archive_fields.MAX_JSON_DEPTH + 1):
        deep = [deep]
    doc = small_doc()
    doc["pages"][0]["meta"] = {"x": deep}
    assert "nested deeper" in refused(doc).problem


def test_row_memory_and_flag_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = small_doc()
    monkeypatch.setattr(archive, "MAX_ARCHIVE_ROWS", 2)
    assert "over the limit of 2" in refused(doc).problem  # three messages
    monkeypatch.undo()
    doc["memory"]["records"] = [memory_record(), memory_record()]
    monkeypatch.setattr(archive_memory, "MAX_MEMORY_ITEMS", 1)
    assert refused(doc).field == "memory.records"
    monkeypatch.undo()
    doc["memory"]["records"] = [
        {**memory_record(), "flags": ["f"] * (archive_memory.MAX_FLAGS + 1)}
    ]
    assert refused(doc).field == "memory.records[0].flags"


def test_max_archive_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    data = json.dumps(small_doc()).encode()
    monkeypatch.setattr(archive, "MAX_ARCHIVE_BYTES", len(data) - 1)
    with pytest.raises(FormatError, match="MAX_ARCHIVE_BYTES"):
        parse_archive(data, source="a.json")


def test_max_chat_floors(monkeypatch: pytest.MonkeyPatch) -> None:
    log = ChatLog(entries=tuple(ChatEntry(name="C", is_user=False, text=str(i)) for i in range(3)))
    monkeypatch.setattr(archive_st, "MAX_CHAT_FLOORS", 2)
    with pytest.raises(LimitExceededError) as info:
        archive_from_st_chat(log, now=NOW, source="c.jsonl")
    assert info.value.limit == "MAX_CHAT_FLOORS"


async def test_max_rename_attempts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = small_doc()
    doc["assets"] = [
        {
            "kind": "preset",
            "name": "P",
            "data": {"a": 1},
            "created_at": NOW.isoformat(),
            "updated_at": NOW.isoformat(),
        }
    ]
    doc["session"]["settings"]["preset"] = "P"
    parsed = parse_archive(doc, source="a.json")
    async with open_test_storage("sqlite", tmp_path=tmp_path) as storage:
        repo = SqlArchiveRepository(storage)
        async with storage.unit_of_work() as uow:
            realm = await uow.realms.add("console", "local")
            for name in ("P", "P (2)"):
                await uow.assets.put(realm_id=realm.id, kind="preset", name=name, data={"b": 2})
        monkeypatch.setattr("adapters.storage.archive_repo.MAX_RENAME_ATTEMPTS", 2)
        with pytest.raises(ConflictError, match="MAX_RENAME_ATTEMPTS=2"):
            await repo.import_session(parsed, platform="console", realm_key="local", key="s")
        async with storage.read() as uow:
            assert await uow.sessions.find("console", "s") is None
        monkeypatch.setattr("adapters.storage.archive_repo.MAX_RENAME_ATTEMPTS", 3)
        result = await repo.import_session(parsed, platform="console", realm_key="local", key="s")
        assert result.renamed_assets == {("preset", "P"): "P (3)"}
