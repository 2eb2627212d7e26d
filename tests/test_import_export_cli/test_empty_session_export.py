"""An empty session exports a SillyTavern header naming its user "User" and its character
(issue 16: it said ``"user_name":"unused"``)."""

from __future__ import annotations

import io
import json

import pytest

from tests.test_import_export_cli.support import ST_FILES, Cli


def _header(cli: Cli, session: str) -> dict[str, object]:
    out = cli.dir / f"{session}.jsonl"
    cli.ok("export", "chat", "--session", session, "-o", out)
    header = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert isinstance(header, dict)
    return header


def test_an_empty_session_exports_named_header(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("/quit\n"))
    cli.ok("chat", "--session", "empty")
    header = _header(cli, "empty")
    assert header["user_name"] == "User"
    assert header["character_name"] == "Narrator"  # who plays a session with no card


def test_a_session_without_user_lines_names_its_character_and_user(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    card = next(p for p in sorted(ST_FILES.iterdir()) if p.name.startswith("card_"))
    monkeypatch.setattr("sys.stdin", io.StringIO("/quit\n"))
    cli.ok("chat", "--session", "carded", "--character", card)
    (name,) = [r[0] for r in cli.rows("SELECT name FROM asset WHERE kind = 'card'")]
    header = _header(cli, "carded")
    assert header["user_name"] == "User"
    assert header["character_name"] == name
