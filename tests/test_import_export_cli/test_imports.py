"""``tavernbot import``: every SillyTavern fixture imports; malformed files write nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli_commands import imports
from engine.errors import FormatError
from engine.formats.archive_st import TRAILING_INPUT_ERROR
from tests.test_import_export_cli.support import REGEX_SCRIPT, Cli, st_fixtures


def test_every_st_fixture_imports_into_a_session(cli: Cli) -> None:
    fixtures = st_fixtures()
    assert {kind for kind, _ in fixtures} == {"card", "preset", "worldbook", "chat"}
    regex = cli.dir / "trim.json"
    regex.write_text(json.dumps([REGEX_SCRIPT]), encoding="utf-8")
    for kind, path in [*fixtures, ("regex", regex)]:
        # A chat becomes a new session of its own (named after the file).
        where = () if kind == "chat" else ("--session", "play")
        out = cli.ok("import", kind, path, *where)
        assert "imported" in out
    (settings,) = cli.rows("SELECT settings FROM session WHERE key = 'play'")
    bound = json.loads(settings[0])
    assert bound["character"] == "Seraphina"
    assert bound["preset"] == "preset_cc_ST_Default"
    assert bound["worldbooks"] == ["worldinfo_Eldoria"]
    assert bound["regex_sets"] == ["trim"]
    kinds = {r[0] for r in cli.rows("SELECT kind FROM asset")}
    assert kinds == {"card", "preset", "worldbook", "regex"}
    # The chat went into a new session named after the file, its reply on floor 1 of main.
    chat = [p for k, p in fixtures if k == "chat"][0]
    (floors,) = cli.rows(
        "SELECT count(*) FROM floor JOIN branch ON branch.id = floor.branch_id "
        f"JOIN session ON session.id = branch.session_id WHERE session.key = '{chat.stem}'"
    )
    assert floors[0] >= 1


def test_assets_without_session_go_to_the_realm_only(cli: Cli) -> None:
    for kind, path in st_fixtures():
        if kind != "chat":
            cli.ok("import", kind, path, "--realm", "shelf")
    assert cli.rows("SELECT count(*) FROM session") == [(0,)]
    realms = cli.rows("SELECT platform, key FROM realm")
    assert realms == [("console", "shelf")]
    names = sorted(r[0] for r in cli.rows("SELECT name FROM asset"))
    assert names == ["Seraphina", "preset_cc_ST_Default", "worldinfo_Eldoria"]


def test_chat_import_names_the_session_and_refuses_an_existing_one(cli: Cli) -> None:
    chat = [p for k, p in st_fixtures() if k == "chat"][0]
    cli.ok("import", "chat", chat, "--session", "aqua")
    before = cli.dump()
    code, _, err = cli("import", "chat", chat, "--session", "aqua")
    assert code == 1
    assert "already exists" in err
    assert cli.dump() == before


def test_trailing_user_lines_are_kept_on_a_failed_floor(cli: Cli) -> None:
    path = cli.dir / "tail.jsonl"
    lines = [
        {"user_name": "U", "character_name": "C", "chat_metadata": {}},
        {"name": "C", "is_user": False, "mes": "hello", "send_date": 1700000000000},
        {"name": "U", "is_user": True, "mes": "anyone?", "send_date": 1700000001000},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    cli.ok("import", "chat", path)
    assert cli.rows("SELECT seq, state, error FROM floor ORDER BY seq") == [
        (1, "committed", None),
        (2, "failed", TRAILING_INPUT_ERROR),
    ]
    assert cli.rows("SELECT raw FROM message WHERE role = 'user'") == [("anyone?",)]


BAD_FILES = [
    ("card", "bad_card.json", b'{"spec": "chara_card_v2", "data": {"name": ["x"]}}', "data.name"),
    ("card", "bad.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, "bad.png"),
    ("preset", "bad_preset.json", b'{"prompts": 7}', "prompts"),
    ("worldbook", "bad_book.json", b'{"entries": {"0": {"key": 3}}}', "entries"),
    ("regex", "bad_regex.json", b'[{"scriptName": "x", "findRegex": ["5"]}]', "findRegex"),
    (
        "chat",
        "bad_chat.jsonl",
        b'{"user_name": "u"}\n{"name": "a", "mes": "x", "swipes": 4}',
        "swipes",
    ),
    (
        "chat",
        "bad.json",
        b'{"format": "tavernbot-archive", "version": 1, "session": 3}',
        "session",
    ),
    ("preset", "not_utf8.json", b"\xff\xfe{", "not_utf8.json"),
]


@pytest.mark.parametrize(("kind", "name", "data", "field"), BAD_FILES)
def test_malformed_file_exits_1_naming_file_and_field_and_writes_nothing(
    cli: Cli, kind: str, name: str, data: bytes, field: str
) -> None:
    card = [p for k, p in st_fixtures() if k == "card"][0]
    cli.ok("import", "card", card, "--session", "play")  # a database with data in it
    before = cli.dump()
    path = cli.dir / name
    path.write_bytes(data)
    code, out, err = cli("import", kind, path, "--session", "play")
    assert code == 1
    messages = [line for line in err.splitlines() if line.startswith("tavernbot:")]
    assert len(messages) == 1, err
    assert str(path) in messages[0] and field in messages[0]
    assert out == ""
    assert cli.dump() == before


def test_archive_with_a_broken_reference_names_the_field(cli: Cli) -> None:
    chat = [p for k, p in st_fixtures() if k == "chat"][0]
    cli.ok("import", "chat", chat, "--session", "aqua")
    archive = cli.dir / "aqua.json"
    cli.ok("export", "chat", "--session", "aqua", "--format", "native", "-o", archive)
    doc = json.loads(archive.read_text(encoding="utf-8"))
    doc["pages"][0]["floor"] = 99
    archive.write_text(json.dumps(doc), encoding="utf-8")
    before = cli.dump()
    code, _, err = cli("import", "chat", archive, "--session", "copy")
    assert code == 1
    assert "pages[0].floor" in err and "at most" in err
    assert cli.dump() == before


def test_missing_file_and_max_file_bytes(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, err = cli("import", "preset", cli.dir / "nope.json")
    assert code == 1 and "nope.json" in err and "cannot read" in err
    big = cli.dir / "big.json"
    big.write_bytes(b"{}" + b" " * 100)
    monkeypatch.setattr(imports, "MAX_FILE_BYTES", 50)
    code, _, err = cli("import", "preset", big)
    assert code == 1 and "MAX_FILE_BYTES=50" in err
    assert not cli.db.exists()


def test_bad_session_name_is_refused_before_anything_is_written(cli: Cli) -> None:
    preset = [p for k, p in st_fixtures() if k == "preset"][0]
    code, _, err = cli("import", "preset", preset, "--session", "x" * 300)
    assert code == 1 and "session" in err
    assert not cli.db.exists()


def test_errors_name_the_path_as_given(tmp_path: Path) -> None:
    with pytest.raises(FormatError) as info:
        imports.prepare("preset", tmp_path / "x.json", b"[]", now=datetime.now(UTC))
    assert info.value.source == str(tmp_path / "x.json")
