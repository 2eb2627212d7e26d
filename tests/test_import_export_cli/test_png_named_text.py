"""A file named ``.png`` that is not a PNG image: refused as "not a PNG image" when it is not
JSON either, read as a JSON card when it is (issue 16: text was "invalid JSON")."""

from __future__ import annotations

import json

import pytest

from engine.errors import FormatError
from engine.formats.cards import parse_card
from tests.test_import_export_cli.support import Cli


def test_text_named_png_is_not_a_png_image(cli: Cli) -> None:
    text = cli.dir / "notes.png"
    text.write_text("hello there\n", encoding="utf-8")
    before = cli.dump()
    code, _, err = cli("import", "card", text)
    assert code == 1
    (line,) = err.splitlines()
    assert (
        line == f"tavernbot: {text}: not a PNG image (no PNG signature) and not a JSON card either"
    )
    assert cli.dump() == before


def test_json_named_png_is_read_as_json(cli: Cli) -> None:
    card = cli.dir / "jo.png"
    card.write_text(json.dumps({"name": "Jo", "description": "a guide"}), encoding="utf-8")
    assert "imported card 'Jo'" in cli.ok("import", "card", card)


def test_the_parser_names_the_file_and_keeps_json_errors_for_json_names() -> None:
    with pytest.raises(FormatError, match="not a PNG image"):
        parse_card(b"GIF89a...", source="Pic.PNG")
    with pytest.raises(FormatError, match="invalid JSON"):
        parse_card(b"hello", source="card.json")
