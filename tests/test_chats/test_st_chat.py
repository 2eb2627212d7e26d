"""SillyTavern chat JSONL: every header generation, swipes as pages, dates, round trips, errors."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import FormatError
from engine.formats.st_chat import (
    MAX_CHAT_BYTES,
    ChatPage,
    chat_to_jsonl,
    chat_to_jsonl_bytes,
    parse_chat,
)
from engine.formats.st_dates import format_timestamp, parse_timestamp
from tests.conftest import ST_FIXTURES

AQUA = ST_FIXTURES / "chat_legacy_Aqua_1673181146000.jsonl"


def jsonl(*objs: object) -> str:
    return "\n".join(json.dumps(o, ensure_ascii=False) for o in objs)


def objects(text: str) -> list[object]:
    return [json.loads(line) for line in text.split("\n") if line.strip()]


ST15 = jsonl(
    {
        "chat_metadata": {"integrity": "u-1", "note_prompt": "AN", "timedWorldInfo": {}, "x": [1]},
        "user_name": "unused",
        "character_name": "unused",
    },
    {
        "name": "Seraphina",
        "is_user": False,
        "is_system": False,
        "send_date": "2026-01-13T10:00:00.000Z",
        "mes": "Hello, 旅人! ✨",
        "swipes": ["Hello, 旅人! ✨", "Second greeting"],
        "swipe_id": 0,
        "swipe_info": [
            {"send_date": "2026-01-13T10:00:00.000Z", "gen_started": None, "extra": {}},
            {"send_date": "2026-01-13T10:00:05.250Z", "extra": {"model": "m"}},
        ],
        "extra": {"api": "openai", "model": "gpt-4o", "token_count": 9, "vendor_key": {"a": 1}},
        "force_avatar": "x.png",
    },
    {
        "name": "User",
        "is_user": True,
        "is_system": False,
        "send_date": "2026-01-13T10:01:00.000Z",
        "mes": "Hi",
        "extra": {},
    },
    {"name": "Note", "is_user": False, "is_system": True, "send_date": "", "mes": "hidden"},
)

ST13 = jsonl(
    {
        "user_name": "Alex",
        "character_name": "Seraphina",
        "create_date": "2025-9-7 @10h 38m 35s 123ms",
        "chat_metadata": {"note_depth": 4},
    },
    {"name": "Alex", "is_user": True, "send_date": "January 2, 2025 2:20pm", "mes": "yo"},
    {"name": "Seraphina", "is_user": False, "send_date": "September 7, 2025 10:38am",
     "mes": "b", "swipes": ["a", "b"], "swipe_id": 1},
)  # fmt: skip

GROUP_NO_HEADER = jsonl(
    {"name": "A", "is_user": False, "mes": "first", "send_date": 1674563371558,
     "original_avatar": "a.png"},
    {"name": "B", "is_user": False, "mes": "second", "send_date": "1674563371999"},
)  # fmt: skip


def test_legacy_fixture_imports_and_exports_byte_for_byte() -> None:
    raw = AQUA.read_bytes()
    log = parse_chat(raw, source=AQUA.name)
    assert (log.user_name, log.character_name) == ("You", "Aqua")
    assert log.create_date == datetime(2023, 1, 24, 11, 31, 36, 839000, tzinfo=UTC)
    assert [e.name for e in log.entries] == ["Aqua"]
    assert log.entries[0].send_date == datetime(2023, 1, 24, 12, 29, 31, 558000, tzinfo=UTC)
    assert len(log.entries[0].pages) == 1
    assert chat_to_jsonl_bytes(log) == raw.rstrip(b"\n")


def test_st15_chat_round_trip() -> None:
    log = parse_chat(ST15.encode(), source="st15.jsonl")
    assert log.chat_metadata["note_prompt"] == "AN"
    first, user, note = log.entries
    assert [p.text for p in first.pages] == ["Hello, 旅人! ✨", "Second greeting"]
    assert first.swipes[1].send_date == datetime(2026, 1, 13, 10, 0, 5, 250000, tzinfo=UTC)
    assert first.swipes[1].info == {
        "send_date": "2026-01-13T10:00:05.250Z",
        "extra": {"model": "m"},
    }
    assert user.is_user and not user.swipes
    assert note.is_system and note.send_date is None
    exported = chat_to_jsonl(log)
    assert objects(exported) == objects(ST15)
    assert "\\u" not in exported and not exported.endswith("\n")
    assert chat_to_jsonl(parse_chat(exported, source="again")) == exported


def test_hidden_messages_are_told_from_system_notes() -> None:
    """``/hide`` sets is_system on a message that keeps its name and is_user; SillyTavern's
    own system notes carry a message type in ``extra``."""
    log = parse_chat(
        jsonl(
            {"user_name": "Ann", "character_name": "Bo"},
            {"name": "Ann", "is_user": True, "is_system": True, "mes": "hidden line"},
            {"name": "Bo", "is_user": False, "is_system": True, "mes": "hidden reply"},
            {"name": "Bo", "is_user": False, "is_system": False, "mes": "shown reply"},
            {"name": "System", "is_system": True, "mes": "note", "extra": {"type": "comment"}},
            {"name": "Bo", "is_system": True, "mes": "no type", "extra": {"type": ""}},
        ),
        source="hidden.jsonl",
    )
    assert [e.is_hidden for e in log.entries] == [True, True, False, False, True]
    assert chat_to_jsonl(parse_chat(chat_to_jsonl(log), source="again")) == chat_to_jsonl(log)


def test_st13_chat_dates_and_swipes() -> None:
    log = parse_chat(ST13, source="st13.jsonl")
    assert log.create_date == datetime(2025, 9, 7, 10, 38, 35, 123000, tzinfo=UTC)
    alex, sera = log.entries
    assert alex.send_date == datetime(2025, 1, 2, 14, 20, tzinfo=UTC)
    assert (sera.swipe_id, sera.text, [p.text for p in sera.pages]) == (1, "b", ["a", "b"])
    assert objects(chat_to_jsonl(log)) == objects(ST13)


def test_headerless_group_chat_stays_headerless_until_it_has_metadata() -> None:
    log = parse_chat(GROUP_NO_HEADER, source="group.jsonl")
    assert log.header is None and [e.text for e in log.entries] == ["first", "second"]
    assert objects(chat_to_jsonl(log)) == objects(GROUP_NO_HEADER)
    again = parse_chat(chat_to_jsonl(log), source="again")
    assert again.entries == log.entries
    # Metadata to write (chat variables set since) needs a header: an ST 1.15 one.
    exported = objects(chat_to_jsonl(replace(log, chat_metadata={"variables": {"a": "1"}})))
    assert exported[0] == {
        "chat_metadata": {"variables": {"a": "1"}},
        "user_name": "unused",
        "character_name": "unused",
    }
    assert exported[1:] == objects(GROUP_NO_HEADER)


def test_blank_lines_are_dropped_and_broken_lines_refuse_the_file() -> None:
    log = parse_chat(ST13.replace("\n", "\n\n", 1) + "\n\n", source="blank.jsonl")
    assert objects(chat_to_jsonl(log)) == objects(ST13)
    text = ST13.replace("\n", "\n\n{broken json\n", 1) + '\n{"mes": 1e999}\n'
    with pytest.raises(FormatError) as info:
        parse_chat(text, source="dirty.jsonl")
    assert str(info.value) == (
        "dirty.jsonl: line 3: not JSON (Expecting property name enclosed in double quotes at"
        " column 2); line 6: not JSON (number out of range); nothing was imported"
    )


def test_edits_are_exported() -> None:
    log = parse_chat(ST15, source="st15.jsonl")
    first = log.entries[0]
    new_date = datetime(2026, 2, 1, 8, 0, tzinfo=UTC)
    edited = replace(
        first,
        text="Second greeting",
        swipe_id=1,
        swipes=(*first.swipes, ChatPage(text="third")),
        send_date=new_date,
    )
    out = objects(chat_to_jsonl(replace(log, entries=(edited,))))[1]
    assert isinstance(out, dict)
    assert out["mes"] == "Second greeting" and out["swipe_id"] == 1
    assert out["swipes"] == ["Hello, 旅人! ✨", "Second greeting", "third"]
    assert out["swipe_info"][2] == {}
    assert out["send_date"] == "2026-02-01T08:00:00.000Z"
    assert out["force_avatar"] == "x.png" and out["extra"]["vendor_key"] == {"a": 1}


def test_timestamps() -> None:
    assert parse_timestamp(0) == datetime(1970, 1, 1, tzinfo=UTC)
    assert parse_timestamp("2026-01-13T10:00:00+02:00") == datetime(2026, 1, 13, 8, tzinfo=UTC)
    assert parse_timestamp("March 3, 2024 12:00pm") == datetime(2024, 3, 3, 12, tzinfo=UTC)
    assert parse_timestamp("2024-3-3@9h5m7s") == datetime(2024, 3, 3, 9, 5, 7, tzinfo=UTC)
    for junk in ("", "soon", None, True, [], "Smarch 3, 2024 1:00pm", 1e300):
        assert parse_timestamp(junk) is None
    assert format_timestamp(datetime(2026, 1, 13, 10, 0, 5, 250999, tzinfo=UTC)) == (
        "2026-01-13T10:00:05.250Z"
    )


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"user_name": "a"}\n[1]', "line 2"),
        ('{"user_name": "a"}\n{"name": ["x"], "mes": "m"}', "line 2: name"),
        ('{"user_name": "a"}\n{"name": "x", "mes": "m", "swipes": "no"}', "line 2: swipes"),
        ('{"user_name": "a"}\n{"name": "x", "mes": "m", "swipes": [1]}', "line 2: swipes[0]"),
        ('{"user_name": "a"}\n{"name": "x", "mes": "m", "swipes": ["m"], "swipe_id": 3}',
         "line 2: swipe_id"),
        ('{"user_name": "a"}\n{"name": "x", "mes": "m", "extra": 3}', "line 2: extra"),
        ('{"user_name": "a", "chat_metadata": []}', "line 1: chat_metadata"),
        ("", ""),
        ("\n\n", ""),
    ],
)  # fmt: skip
def test_malformed(text: str, field: str) -> None:
    with pytest.raises(FormatError) as info:
        parse_chat(text.encode(), source="bad.jsonl")
    assert (info.value.source, info.value.field) == ("bad.jsonl", field)


def test_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.formats.st_chat as module

    monkeypatch.setattr(module, "MAX_CHAT_BYTES", 20)
    with pytest.raises(FormatError, match="MAX_CHAT_BYTES"):
        parse_chat(ST13, source="big.jsonl")
    assert MAX_CHAT_BYTES >= 100 * 1024 * 1024


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
message_keys = st.sampled_from(
    ["name", "is_user", "is_system", "mes", "send_date", "swipes", "swipe_id", "swipe_info",
     "extra", "chat_metadata", "user_name", "create_date"]
)  # fmt: skip
line_like = st.dictionaries(message_keys, json_values, max_size=6) | json_values


def _try(data: bytes) -> None:
    try:
        log = parse_chat(data, source="fuzz")
    except FormatError as exc:
        assert exc.source == "fuzz"
        return
    exported = chat_to_jsonl(log)
    assert chat_to_jsonl(parse_chat(exported, source="again")) == exported


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_bytes(data: bytes) -> None:
    _try(data)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_unicode(text: str) -> None:
    _try(text.encode("utf-8", "replace"))


@settings(max_examples=200, deadline=None)
@given(st.lists(line_like, min_size=1, max_size=4))
def test_fuzz_chat_shaped(lines: list[object]) -> None:
    _try("\n".join(json.dumps(line) for line in lines).encode())


def test_engine_made_chat_exports_as_st15() -> None:
    from engine.formats.st_chat import ChatEntry, ChatLog

    when = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    log = ChatLog(
        chat_metadata={"note_prompt": "n"},
        entries=(
            ChatEntry(name="Bob", is_user=True, text="hi", send_date=when),
            ChatEntry(
                name="Ann",
                is_user=False,
                text="b",
                swipes=(ChatPage(text="a"), ChatPage(text="b", send_date=when)),
                swipe_id=1,
                extra={"model": "m"},
            ),
        ),
    )
    header, bob, ann = objects(chat_to_jsonl(log))
    assert header == {"chat_metadata": {"note_prompt": "n"}, "user_name": "unused",
                      "character_name": "unused"}  # fmt: skip
    assert bob == {"name": "Bob", "is_user": True, "is_system": False,
                   "send_date": "2026-03-01T12:00:00.000Z", "mes": "hi"}  # fmt: skip
    assert ann == {"name": "Ann", "is_user": False, "is_system": False, "mes": "b",
                   "swipes": ["a", "b"], "swipe_id": 1,
                   "swipe_info": [{}, {"send_date": "2026-03-01T12:00:00.000Z"}],
                   "extra": {"model": "m"}}  # fmt: skip
    again = parse_chat(chat_to_jsonl(log), source="again")
    assert [(e.name, e.text, e.swipe_id) for e in again.entries] == [
        ("Bob", "hi", 0),
        ("Ann", "b", 1),
    ]
