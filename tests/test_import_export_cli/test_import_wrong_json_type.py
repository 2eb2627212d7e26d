"""``tavernbot import KIND FILE`` on valid JSON of the wrong type says what is really wrong.

A file holding the JSON string ``"abc"`` is valid JSON, so "invalid JSON" misleads: the message
names what the kind expects and what the file holds instead, in one line, exit code 1.
"""

from __future__ import annotations

import pytest

from tests.test_import_export_cli.support import Cli

EXPECTED = {
    "regex": "expected a regex script object or a list of them",
    "preset": "expected a preset object",
    "worldbook": "expected a world book object",
    "card": "expected a character card object",
    "chat": "expected a chat header or message object",
}
GOT = {'"abc"': "got a string", "42": "got a number", "null": "got null", "true": "got a boolean"}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
@pytest.mark.parametrize("content", sorted(GOT))
def test_valid_json_of_the_wrong_type_is_named(cli: Cli, kind: str, content: str) -> None:
    path = cli.dir / "thing.json"
    path.write_text(content + "\n", encoding="utf-8")
    code, out, err = cli("import", kind, path)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "invalid JSON" not in err
    assert f"{EXPECTED[kind]}, {GOT[content]}" in err, err
    assert cli.dump().get("asset", []) == []


@pytest.mark.parametrize("kind", ["preset", "worldbook", "card"])
def test_a_list_where_an_object_is_expected_is_named(cli: Cli, kind: str) -> None:
    path = cli.dir / "thing.json"
    path.write_text("[1, 2]", encoding="utf-8")
    code, _, err = cli("import", kind, path)
    assert code == 1
    assert f"{EXPECTED[kind]}, got an array" in err, err


def test_regex_list_items_of_the_wrong_type_are_named(cli: Cli) -> None:
    path = cli.dir / "scripts.json"
    path.write_text('["abc"]', encoding="utf-8")
    code, _, err = cli("import", "regex", path)
    assert code == 1
    assert "[0]: expected a regex script object, got a string" in err, err


def test_broken_json_still_says_invalid_json(cli: Cli) -> None:
    path = cli.dir / "scripts.json"
    path.write_text('{"scriptName": ', encoding="utf-8")
    code, _, err = cli("import", "regex", path)
    assert code == 1 and "invalid JSON" in err
