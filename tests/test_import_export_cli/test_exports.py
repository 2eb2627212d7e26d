"""``tavernbot export``: card, chat (JSONL and native) and asset round trips through the CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from engine.formats.archive import parse_archive
from engine.formats.cards import card_to_json, parse_card
from engine.formats.png import read_chunks
from engine.formats.st_chat import ChatLog, parse_chat
from tests.test_import_export_cli.support import REGEX_SCRIPT, Cli, st_fixtures


def _fixture(kind: str):  # type: ignore[no-untyped-def]
    return [p for k, p in st_fixtures() if k == kind][0]


def _image(png: bytes) -> list[tuple[bytes, bytes]]:
    """The PNG's chunks other than text (the picture itself)."""
    return [(c.type, c.data) for c in read_chunks(png, source="x") if c.type != b"tEXt"]


def test_png_card_export_import_round_trips(cli: Cli) -> None:
    original = _fixture("card").read_bytes()
    cli.ok("import", "card", _fixture("card"), "--realm", "r1")
    first = cli.dir / "first.png"
    cli.ok("export", "card", "Seraphina", "--realm", "r1", "-o", first)
    # A picture was imported, so the export is a PNG with the same picture and both chunks.
    exported = first.read_bytes()
    assert _image(exported) == _image(original)
    texts = [
        c.data.split(b"\0")[0] for c in read_chunks(exported, source="x") if c.type == b"tEXt"
    ]
    assert sorted(texts) == [b"ccv3", b"chara"]
    assert card_to_json(parse_card(exported, source="a")) == card_to_json(
        parse_card(original, source="b")
    )
    cli.ok("import", "card", first, "--realm", "r2")
    second = cli.dir / "second.png"
    cli.ok("export", "card", "Seraphina", "--realm", "r2", "-o", second)
    assert second.read_bytes() == exported


def test_json_card_exports_as_json_unless_png_is_asked(cli: Cli) -> None:
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {"name": "Jay", "description": "d", "extensions": {"mine": {"x": [1, 2]}}},
        "unknown_top": True,
    }
    path = cli.dir / "jay.json"
    path.write_text(json.dumps(card), encoding="utf-8")
    cli.ok("import", "card", path)
    out = cli.dir / "out.json"
    cli.ok("export", "card", "Jay", "-o", out)
    again = json.loads(out.read_text(encoding="utf-8"))
    assert again["unknown_top"] is True and again["data"]["extensions"]["mine"] == {"x": [1, 2]}
    assert card_to_json(parse_card(out.read_bytes(), source="o")) == card_to_json(
        parse_card(path.read_bytes(), source="p")
    )
    png = cli.dir / "out.png"
    cli.ok("export", "card", "Jay", "--png", "-o", png)
    from_png = card_to_json(parse_card(png.read_bytes(), source="png"))
    # The PNG's preferred ccv3 chunk is the same object labelled V3 (as SillyTavern writes it).
    assert (from_png.pop("spec"), from_png.pop("spec_version")) == ("chara_card_v3", "3.0")
    again.pop("spec"), again.pop("spec_version")
    assert from_png == again


def test_preset_worldbook_and_regex_export_what_was_imported(cli: Cli) -> None:
    regex = cli.dir / "trim.json"
    regex.write_text(json.dumps(REGEX_SCRIPT), encoding="utf-8")
    for kind, path, name in (
        ("preset", _fixture("preset"), "preset_cc_ST_Default"),
        ("worldbook", _fixture("worldbook"), "worldinfo_Eldoria"),
        ("regex", regex, "trim"),
    ):
        cli.ok("import", kind, path)
        out = cli.dir / f"{name}.out"
        cli.ok("export", kind, name, "-o", out)
        expected = json.loads(path.read_text(encoding="utf-8"))
        if kind == "regex":
            expected = [expected]
        assert json.loads(out.read_text(encoding="utf-8")) == expected


def _comparable(log: ChatLog) -> list[tuple[object, ...]]:
    """What a JSONL round trip keeps (see the report and engine.formats.archive_st)."""
    return [
        (
            e.name,
            e.is_user,
            e.is_system,
            e.text,
            e.send_date,
            tuple(p.text for p in e.swipes),
            e.swipe_id if e.swipes else 0,
        )
        for e in log.entries
    ]


def test_st_fixture_chat_import_export_equal(cli: Cli) -> None:
    chat = _fixture("chat")
    cli.ok("import", "chat", chat, "--session", "aqua")
    out = cli.dir / "aqua.jsonl"
    cli.ok("export", "chat", "--session", "aqua", "-o", out)
    before = parse_chat(chat.read_bytes(), source="in")
    after = parse_chat(out.read_bytes(), source="out")
    assert _comparable(after) == _comparable(before)
    # The header's names come from the messages (this chat has no user line, so the user's
    # name is not known to the export): documented, like the dropped chat_metadata.
    assert after.character_name == before.character_name


def test_chat_with_swipes_and_several_inputs_round_trips(cli: Cli) -> None:
    t = 1_700_000_000_000
    lines = [
        {
            "user_name": "Ann",
            "character_name": "Bo",
            "create_date": "2024-1-2@10h11m12s",
            "chat_metadata": {"note": "kept"},
        },
        {"name": "Bo", "is_user": False, "mes": "Hi Ann ✨", "send_date": t},
        {"name": "Ann", "is_user": True, "mes": "one", "send_date": t + 1000},
        {"name": "Ann", "is_user": True, "mes": "two\nlines", "send_date": t + 2000},
        {
            "name": "Bo",
            "is_user": False,
            "mes": "B",
            "send_date": t + 3000,
            "swipes": ["A", "B", "C"],
            "swipe_id": 1,
            "swipe_info": [{"send_date": t + 2500}, {"send_date": t + 3000}, {}],
            "extra": {"api": "x"},
        },
        {
            "name": "System",
            "is_user": False,
            "is_system": True,
            "mes": "note",
            "send_date": t + 4000,
            "extra": {"type": "narrator"},
        },
        {"name": "Ann", "is_user": True, "mes": "three", "send_date": t + 5000},
        # Hidden from the model, as SillyTavern's /hide leaves a line: is_system, no type.
        {"name": "Ann", "is_user": True, "is_system": True, "mes": "aside", "send_date": t + 5500},
        {"name": "Bo", "is_user": False, "mes": "end", "send_date": t + 6000},
    ]
    path = cli.dir / "bo.jsonl"
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines), encoding="utf-8")
    cli.ok("import", "chat", path)
    out = cli.dir / "bo.out.jsonl"
    cli.ok("export", "chat", "--session", "bo", "-o", out)
    before = parse_chat(path.read_bytes(), source="in")
    after = parse_chat(out.read_bytes(), source="out")
    assert _comparable(after) == _comparable(before)
    (pages,) = cli.rows("SELECT count(*) FROM page")
    assert pages[0] == 5  # 1 + 3 swipes + 1
    # The note is an input the model sees; the hidden line is kept, hidden.
    assert cli.rows("SELECT raw, role FROM message WHERE hidden") == [("aside", "user")]
    visible = cli.dir / "bo.visible.jsonl"
    cli.ok("export", "chat", "--session", "bo", "--no-include-hidden", "-o", visible)
    texts = [e.text for e in parse_chat(visible.read_bytes(), source="v").entries]
    assert "aside" not in texts and "note" in texts and "three" in texts
    # What JSONL export leaves out is still in the database (and in a native export).
    native = cli.dir / "bo.json"
    cli.ok("export", "chat", "--session", "bo", "--format", "native", "-o", native)
    archive = parse_archive(native.read_bytes(), source="bo.json")
    kept = archive.session.settings["st_chat_files"]["main"]
    assert kept["header"]["chat_metadata"] == {"note": "kept"}
    metas = [dict(p.meta) for p in archive.pages]
    assert any(m.get("st_line", {}).get("extra") == {"api": "x"} for m in metas)
    assert any(m.get("st_swipe_info") == {"send_date": t + 3000} for m in metas)


def test_native_archive_cli_round_trip(cli: Cli) -> None:
    cli.ok("import", "chat", _fixture("chat"), "--session", "aqua")
    cli.ok("import", "card", _fixture("card"), "--session", "aqua")
    first = cli.dir / "first.json"
    cli.ok("export", "chat", "--session", "aqua", "--format", "native", "-o", first)
    cli.ok("import", "chat", first, "--session", "copy")
    second = cli.dir / "second.json"
    cli.ok("export", "chat", "--session", "copy", "--format", "native", "-o", second)
    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (first, second))
    for doc in (a, b):
        doc.pop("exported_at")
        doc["session"].pop("key")  # the session it was imported as: documented
    assert a == b
    assert a["assets"] and a["assets"][0]["name"] == "Seraphina"


def test_export_errors(cli: Cli) -> None:
    code, _, err = cli("export", "chat", "--session", "nobody", "-o", cli.dir / "x")
    assert code == 1 and "nobody" in err
    code, _, err = cli("export", "chat")
    assert code == 2 and "--session" in err
    cli.ok("import", "preset", _fixture("preset"))
    code, _, err = cli("export", "card", "Nobody", "-o", cli.dir / "y")
    assert code == 1 and "Nobody" in err
    assert not (cli.dir / "y").exists()


def test_exported_dates_are_utc_iso(cli: Cli) -> None:
    cli.ok("import", "chat", _fixture("chat"), "--session", "aqua")
    out = cli.dir / "a.json"
    cli.ok("export", "chat", "--session", "aqua", "--format", "native", "-o", out)
    doc = json.loads(out.read_text(encoding="utf-8"))
    stamp = datetime.fromisoformat(doc["messages"][0]["created_at"])
    assert stamp.utcoffset() is not None and stamp.astimezone(UTC) == stamp
