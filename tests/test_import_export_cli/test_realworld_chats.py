"""``tavernbot import chat`` then ``tavernbot export chat`` gives back a real SillyTavern
chat as it was (compared as JSON lines): every field of every line, the header's
``create_date``, no header for an old group chat, and ``chat_metadata.variables``, which the
import turns into the session's chat-scope variables (``/vars chat``)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from tests.conftest import SHARED
from tests.test_import_export_cli.support import Cli

CHATS = SHARED / "realworld" / "chats"
ROUND_TRIPPED = (
    "mgb_group_2024-7-15.jsonl",  # no header (a group chat before ST 1.15)
    "stbl_Assistant_2026.jsonl",  # chat variables, reasoning in extra
    "mgb_DrGregoryHouse.jsonl",  # three swipes, the third shown
    "st2023_Megumin.jsonl",  # TavernAI era: epoch dates, is_name
)


def objects(text: str | bytes) -> list[dict[str, Any]]:
    """The file's lines as JSON objects (empty lines skipped, as SillyTavern skips them)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return [json.loads(line) for line in text.split("\n") if line.strip()]


@pytest.mark.parametrize("name", ROUND_TRIPPED)
def test_a_real_chat_comes_back_as_it_went_in(cli: Cli, name: str) -> None:
    path = CHATS / name
    cli.ok("import", "chat", path, "--session", "real")
    out = cli.dir / "out.jsonl"
    cli.ok("export", "chat", "--session", "real", "-o", out)
    assert objects(out.read_bytes()) == objects(path.read_bytes())


def test_the_chat_variables_are_the_sessions_chat_variables(cli: Cli) -> None:
    path = CHATS / "stbl_Assistant_2026.jsonl"
    variables = objects(path.read_bytes())[0]["chat_metadata"]["variables"]
    cli.ok("import", "chat", path, "--session", "vars")
    rows = cli.rows("SELECT key, value FROM variable_value WHERE scope = 'chat'")
    assert {key: json.loads(value) for key, value in rows} == variables
    # Changed in the database as /vars set would: the export writes the current values.
    with sqlite3.connect(cli.db) as conn:
        conn.execute(
            "UPDATE variable_value SET value = ? WHERE scope = 'chat' AND key = 'nsfw'",
            (json.dumps("changed"),),
        )
    out = objects(cli.ok("export", "chat", "--session", "vars"))
    assert out[0]["chat_metadata"]["variables"] == {**variables, "nsfw": "changed"}


def test_chat_variables_that_are_not_an_object_refuse_the_file(cli: Cli) -> None:
    path = cli.dir / "bad.jsonl"
    header = {"user_name": "Ann", "chat_metadata": {"variables": "oops"}}
    path.write_text(
        "\n".join(json.dumps(o) for o in (header, {"name": "Mira", "mes": "Hi"})),
        encoding="utf-8",
    )
    before = cli.dump()
    code, _, err = cli("import", "chat", path, "--session", "bad")
    assert code == 1 and "chat_metadata.variables: expected an object" in err
    assert len(err.strip().splitlines()) == 1
    assert cli.dump() == before
