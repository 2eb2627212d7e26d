"""``tavernbot prompt dry-run`` (its own process) with a real world book whose every entry
sits before the Author's Note: the entries appear at the note's depth when the note has no
text, and stay out when interval 0 turns the note off, as in SillyTavern."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from engine.prompt.inputs import AuthorNote
from engine.turns.notes import note_from_chat_metadata
from tests.conftest import ROOT, SHARED
from tests.test_worldinfo.test_author_note_positions import AN_TOP_BOOK

CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {"name": "Odahviing", "description": "{{char}} is a dragon.", "first_mes": "Hello"},
}
HISTORY = SHARED / "realworld" / "chats" / "mgb_Odahviing.jsonl"


def _dry_run(where: Path, *extra: str) -> tuple[int, dict[str, Any] | None, str]:
    card = where / "odahviing.json"
    card.write_text(json.dumps(CARD), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot",
            "prompt",
            "dry-run",
            "--card",
            str(card),
            "--worldbook",
            str(AN_TOP_BOOK),
            "--history",
            str(HISTORY),
            "--message",
            "What now?",
            "--max-context",
            "32000",
            "--json",
            *extra,
        ],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
        timeout=60,
    )
    err = done.stderr.decode("utf-8", "replace")
    return done.returncode, (json.loads(done.stdout) if done.returncode == 0 else None), err


def _world_messages(data: dict[str, Any]) -> list[int]:
    """Indexes of the messages carrying world entries."""
    return [
        i
        for i, m in enumerate(data["messages"])
        if any(s["kind"] == "world" for s in m["sources"])
    ]


def _depth(data: dict[str, Any], index: int) -> int:
    later = data["messages"][index + 1 :]
    return sum(1 for s in later if any(x["kind"] == "history" for x in s["sources"]))


def test_entries_reach_the_prompt_at_the_note_depth_without_note_text(tmp_path: Path) -> None:
    code, data, err = _dry_run(tmp_path)
    assert code == 0 and data is not None, err
    books = {e["book"] for e in data["world_info"]}
    assert books == {AN_TOP_BOOK.stem} and len(data["world_info"]) == 20
    # No note given: SillyTavern's default (empty, every turn, depth 4, system).
    (index,) = _world_messages(data)
    assert _depth(data, index) == 4 and data["messages"][index]["role"] == "system"
    code, data, err = _dry_run(tmp_path, "--note-depth", "1")
    assert code == 0 and data is not None, err
    (index,) = _world_messages(data)
    assert _depth(data, index) == 1
    refs = [s for s in data["messages"][index]["sources"] if s["kind"] == "world"]
    assert len(refs) == 20


def test_interval_zero_leaves_them_out(tmp_path: Path) -> None:
    code, data, err = _dry_run(tmp_path, "--note-interval", "0")
    assert code == 0 and data is not None, err
    assert len(data["world_info"]) == 20
    assert _world_messages(data) == []


def test_note_text_sits_between_the_entries_and_the_chat(tmp_path: Path) -> None:
    code, data, err = _dry_run(tmp_path, "--note", "Keep it short.", "--note-depth", "0")
    assert code == 0 and data is not None, err
    (index,) = _world_messages(data)
    message = data["messages"][index]
    assert message["content"].endswith("\nKeep it short.")
    assert {"kind": "author_note", "ref": ""} in message["sources"]


def test_a_bad_note_option_is_one_clear_line(tmp_path: Path) -> None:
    code, _, err = _dry_run(tmp_path, "--note-interval", "-1")
    assert code == 2  # a bad setting is a configuration error (README: exit codes)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "interval" in lines[0] and "Traceback" not in err


def _chat_with_note(where: Path, **note: object) -> Path:
    """The real chat with its header's note settings changed (written to a temporary file)."""
    lines = HISTORY.read_text("utf-8").splitlines()
    header = json.loads(lines[0])
    header["chat_metadata"].update(note)
    path = where / "chat.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]), encoding="utf-8")
    return path


def _with_history(where: Path, history: Path, *extra: str) -> tuple[int, Any, str]:
    return _dry_run(where, "--history", str(history), *extra)


def test_the_chat_header_note_is_the_dry_runs_note(tmp_path: Path) -> None:
    # The real chat's own note: SillyTavern's default (empty text, interval 1, depth 4).
    assert (
        json.loads(HISTORY.read_text("utf-8").splitlines()[0])["chat_metadata"]["note_interval"]
        == 1
    )
    off = _chat_with_note(tmp_path, note_interval=0)
    code, data, err = _with_history(tmp_path, off)
    assert code == 0 and data is not None, err
    assert len(data["world_info"]) == 20 and _world_messages(data) == []
    # An option overrides the chat's setting.
    code, data, err = _with_history(tmp_path, off, "--note-interval", "1")
    assert code == 0 and data is not None, err
    (index,) = _world_messages(data)
    assert _depth(data, index) == 4
    shallow = _chat_with_note(tmp_path, note_depth=1.0, note_prompt="Stay in Skyrim.")
    code, data, err = _with_history(tmp_path, shallow)
    assert code == 0 and data is not None, err
    (index,) = _world_messages(data)
    assert _depth(data, index) == 1
    assert data["messages"][index]["content"].endswith("\nStay in Skyrim.")


def test_a_bad_chat_header_note_is_one_clear_line(tmp_path: Path) -> None:
    bad = _chat_with_note(tmp_path, note_depth="deep")
    code, _, err = _with_history(tmp_path, bad)
    assert code == 1 and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert "chat.jsonl" in line and "note_depth" in line


def test_every_real_chat_header_note_reads() -> None:
    chats = sorted((SHARED / "realworld" / "chats").glob("*.jsonl"))
    notes = {}
    for path in chats:
        header = json.loads(path.read_text("utf-8").splitlines()[0])
        metadata = header.get("chat_metadata") if isinstance(header, dict) else None
        notes[path.name] = note_from_chat_metadata(metadata or {})
    # Every real chat that keeps a note keeps SillyTavern's default one.
    assert set(notes.values()) == {None, AuthorNote()}
    assert notes["mgb_Odahviing.jsonl"] == AuthorNote()
