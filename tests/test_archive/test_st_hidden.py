"""A SillyTavern chat's hidden lines (``is_system`` without a note type) come into the native
archive hidden, as the service's own import hides them."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from engine.formats.archive_st import archive_from_st_chat
from engine.formats.st_chat import parse_chat

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _archive(*lines: dict[str, object]):  # type: ignore[no-untyped-def]
    header = {"user_name": "Ann", "character_name": "Bo"}
    text = "\n".join(json.dumps(x) for x in (header, *lines))
    return archive_from_st_chat(parse_chat(text.encode(), source="t"), now=NOW, source="t")


def test_a_hidden_reply_after_hidden_inputs_hides_its_floor() -> None:
    archive = _archive(
        {"name": "Ann", "is_user": True, "mes": "seen"},
        {"name": "Bo", "is_user": False, "mes": "reply"},
        {"name": "Ann", "is_user": True, "is_system": True, "mes": "gone"},
        {"name": "Bo", "is_user": False, "is_system": True, "mes": "gone too"},
    )
    assert [f.hidden for f in archive.floors] == [False, True]
    assert [(m.raw, m.role, m.hidden) for m in archive.messages if m.page is None] == [
        ("seen", "user", False),
        ("gone", "user", True),
    ]
    assert [p.hidden for p in archive.pages] == [False, True]


def test_a_hidden_reply_after_a_visible_input_hides_only_its_pages() -> None:
    archive = _archive(
        {"name": "Ann", "is_user": True, "mes": "seen"},
        {"name": "Bo", "is_user": False, "is_system": True, "mes": "hidden", "swipes": ["a", "b"]},
    )
    assert [f.hidden for f in archive.floors] == [False]
    assert [p.hidden for p in archive.pages] == [True, True]


def test_a_typed_system_note_stays_a_visible_input() -> None:
    archive = _archive(
        {
            "name": "System",
            "is_user": False,
            "is_system": True,
            "mes": "n",
            "extra": {"type": "narrator"},
        },
        {"name": "Bo", "is_user": False, "mes": "reply"},
    )
    assert [(m.raw, m.role, m.hidden) for m in archive.messages if m.page is None] == [
        ("n", "system", False)
    ]
    assert [f.hidden for f in archive.floors] == [False]
