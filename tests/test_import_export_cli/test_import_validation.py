"""Issue 12: every imported file is checked once for lone surrogates and deep nesting.

A lone UTF-16 surrogate (``"\\ud800"`` in JSON) used to import with exit 0 in a preset or a
world book and then fail every turn, and to crash a card import with a traceback; a chat whose
metadata nested 900 levels deep crashed with RecursionError. Now each is refused at the door:
exit code 1, one line naming the file and the field path, nothing written.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from engine.errors import FormatError
from engine.formats.archive import ARCHIVE_FORMAT, ARCHIVE_VERSION
from engine.formats.json_input import MAX_IMPORT_JSON_DEPTH, check_decoded, loads
from engine.formats.png import blank_png, make_text_chunk, read_chunks, write_chunks
from tests.test_import_export_cli.support import REGEX_SCRIPT, Cli

LONE = "\ud800"


def _nested(levels: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    here = top
    for _ in range(levels - 1):
        here["a"] = {}
        here = here["a"]
    return top


def _png_card(card: dict[str, Any]) -> bytes:
    payload = base64.b64encode(json.dumps(card).encode("ascii")).decode("ascii")
    chunks = read_chunks(blank_png(), source="blank")
    return write_chunks([*chunks[:-1], make_text_chunk("chara", payload), chunks[-1]])


def _chat(*lines: dict[str, Any]) -> bytes:
    return "\n".join(json.dumps(x) for x in lines).encode("utf-8")


HEADER = {"user_name": "U", "character_name": "C", "chat_metadata": {}}
REPLY = {"name": "C", "is_user": False, "mes": "hello", "send_date": 1700000000000}

# (kind, file name, bytes, the field path the error must name)
SURROGATE_FILES: list[tuple[str, str, bytes, str]] = [
    (
        "preset",
        "story.json",
        json.dumps(
            {"prompts": [{"identifier": "main"}, {"identifier": "x", "content": f"a{LONE}"}]}
        ).encode(),
        "prompts[1].content",
    ),
    (
        "worldbook",
        "lore.json",
        json.dumps({"entries": {"3": {"uid": 3, "key": ["k"], "content": LONE}}}).encode(),
        "entries.3.content",
    ),
    (
        "card",
        "bob.json",
        json.dumps(
            {"spec": "chara_card_v2", "data": {"name": "Bob", "description": LONE}}
        ).encode(),
        "data.description",
    ),
    (
        "card",
        "bob.png",
        _png_card({"spec": "chara_card_v2", "data": {"name": "Bob", "scenario": LONE}}),
        "png:chara.data.scenario",
    ),
    (
        "regex",
        "clean.json",
        json.dumps([{**REGEX_SCRIPT, "replaceString": LONE}]).encode(),
        "[0].replaceString",
    ),
    ("chat", "old.jsonl", _chat(HEADER, {**REPLY, "mes": f"hi {LONE}"}), "line 2: mes"),
    (
        "chat",
        "saved.json",
        json.dumps(
            {"format": ARCHIVE_FORMAT, "version": ARCHIVE_VERSION, "session": {"key": LONE}}
        ).encode(),
        "session.key",
    ),
]


@pytest.mark.parametrize(
    ("kind", "name", "data", "field"), SURROGATE_FILES, ids=[f[1] for f in SURROGATE_FILES]
)
def test_cli_refuses_a_lone_surrogate_naming_file_and_field(
    cli: Cli, kind: str, name: str, data: bytes, field: str
) -> None:
    path = cli.dir / name
    path.write_bytes(data)
    where = () if kind == "chat" else ("--session", "play")
    before = cli.dump()
    code, out, err = cli("import", kind, path, *where)
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1, err  # one line, no traceback
    assert str(path) in err
    assert f": {field}: " in err
    assert "lone surrogate" in err
    assert cli.dump() == before


def test_cli_refuses_chat_metadata_nested_900_levels(cli: Cli) -> None:
    path = cli.dir / "deep.jsonl"
    path.write_bytes(_chat({**HEADER, "chat_metadata": _nested(900)}, REPLY))
    before = cli.dump()
    code, _, err = cli("import", "chat", path)
    assert code == 1
    assert err.count("\n") == 1, err
    assert f"{path}: line 1: chat_metadata.a.a...: " in err
    assert f"MAX_IMPORT_JSON_DEPTH={MAX_IMPORT_JSON_DEPTH}" in err
    assert cli.dump() == before


def test_cli_refuses_nesting_deeper_than_the_parser_can_go(cli: Cli) -> None:
    # Past the interpreter's recursion limit the parser itself gives up: the same message.
    path = cli.dir / "deep.json"
    path.write_text('{"prompts": ' + "[" * 5000 + "]" * 5000 + "}", encoding="utf-8")
    code, _, err = cli("import", "preset", path, "--session", "play")
    assert code == 1
    assert err.count("\n") == 1, err
    assert f"MAX_IMPORT_JSON_DEPTH={MAX_IMPORT_JSON_DEPTH}" in err


def test_nesting_up_to_the_limit_is_accepted() -> None:
    check_decoded(_nested(MAX_IMPORT_JSON_DEPTH), source="f.json")
    with pytest.raises(FormatError, match="MAX_IMPORT_JSON_DEPTH"):
        check_decoded(_nested(MAX_IMPORT_JSON_DEPTH + 1), source="f.json")
    with pytest.raises(FormatError, match="MAX_IMPORT_JSON_DEPTH"):
        check_decoded([_nested(MAX_IMPORT_JSON_DEPTH)], source="f.json")


def test_paired_surrogates_and_keys() -> None:
    # An escaped pair is one character (an emoji), not a lone surrogate.
    assert loads('{"t": "\\ud83d\\ude00"}', source="f.json") == {"t": "\U0001f600"}
    with pytest.raises(FormatError) as info:
        loads('{"a": {"\\udc00": 1}}', source="f.json")
    assert info.value.field == "a"
    assert "key" in info.value.problem
