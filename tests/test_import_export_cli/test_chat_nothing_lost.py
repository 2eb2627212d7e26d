"""``tavernbot import chat`` / ``export chat``: nothing is lost on the way in or out.

- A chat ending with a user message that has no reply yet exports that message as a normal
  line, as SillyTavern writes it.
- A chat file with a line that is not JSON is refused whole, with one line naming the line
  numbers and what is wrong (exit 1, nothing imported), instead of being imported without it.
"""

from __future__ import annotations

import json
from typing import Any

from tests.test_import_export_cli.support import Cli

HEADER = {"user_name": "Ann", "character_name": "Mira", "chat_metadata": {"note": 1}}
GREETING = {"name": "Mira", "is_user": False, "mes": "Hello, Ann."}
QUESTION = {"name": "Ann", "is_user": True, "mes": "Where are we?"}
ANSWER = {"name": "Mira", "is_user": False, "mes": "In the woods."}
WAITING = {"name": "Ann", "is_user": True, "mes": "And now? (no reply yet)"}


def _jsonl(*lines: dict[str, Any]) -> str:
    return "\n".join(json.dumps(line, ensure_ascii=False) for line in lines)


def _objects(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_trailing_user_message_survives_import_and_export(cli: Cli) -> None:
    path = cli.dir / "woods.jsonl"
    path.write_text(_jsonl(HEADER, GREETING, QUESTION, ANSWER, WAITING), encoding="utf-8")
    cli.ok("import", "chat", path, "--session", "woods")
    out = _objects(cli.ok("export", "chat", "--session", "woods"))
    assert [(o["name"], o["is_user"], o["mes"]) for o in out[1:]] == [
        (line["name"], line["is_user"], line["mes"])
        for line in (GREETING, QUESTION, ANSWER, WAITING)
    ]
    assert out[-1].get("is_system", False) is False  # a normal line, not a hidden one


def test_a_chat_that_is_only_a_user_message_exports_it(cli: Cli) -> None:
    path = cli.dir / "alone.jsonl"
    path.write_text(_jsonl(HEADER, WAITING), encoding="utf-8")
    cli.ok("import", "chat", path, "--session", "alone")
    out = _objects(cli.ok("export", "chat", "--session", "alone", "--no-include-hidden"))
    assert [o["mes"] for o in out[1:]] == [WAITING["mes"]]


def test_a_line_that_is_not_json_refuses_the_whole_file(cli: Cli) -> None:
    path = cli.dir / "dirty.jsonl"
    lines = [
        _jsonl(HEADER),
        _jsonl(GREETING),
        "{broken json",
        _jsonl(QUESTION),
        "",
        '{"mes": 1e999}',
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    before = cli.dump()
    code, out, err = cli("import", "chat", path, "--session", "dirty")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "line 3: not JSON" in err and "line 6: not JSON" in err
    assert "nothing was imported" in err
    assert cli.dump() == before


def test_many_bad_lines_are_counted_not_all_listed(cli: Cli) -> None:
    from engine.formats.st_chat import MAX_LISTED_BAD_LINES

    path = cli.dir / "junk.jsonl"
    junk = ["not json"] * (MAX_LISTED_BAD_LINES + 7)
    path.write_text("\n".join([_jsonl(HEADER), *junk]), encoding="utf-8")
    code, _, err = cli("import", "chat", path)
    assert code == 1 and err.count("\n") == 1
    assert f"line {MAX_LISTED_BAD_LINES + 1}: not JSON" in err
    assert f"line {MAX_LISTED_BAD_LINES + 2}:" not in err
    assert "and 7 more lines that are not JSON" in err
