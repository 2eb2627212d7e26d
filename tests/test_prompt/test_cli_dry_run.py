"""``tavernbot prompt dry-run`` on the SillyTavern fixtures, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from tests.test_prompt.helpers import DATA

CARD = str(DATA / "card_v2v3_Seraphina.png")
PRESET = str(DATA / "preset_cc_ST_Default.json")
BOOK = str(DATA / "worldinfo_Eldoria.json")
CHAT = str(DATA / "chat_legacy_Aqua_1673181146000.jsonl")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["prompt", "dry-run", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_dry_run_prints_messages_sources_world_info_and_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(
        capsys,
        "--card",
        CARD,
        "--preset",
        PRESET,
        "--worldbook",
        BOOK,
        "--history",
        CHAT,
        "--user",
        "Ann",
        "--message",
        "Tell me about the forest",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert set(data) >= {"messages", "world_info", "macro", "budget"}
    assert data["messages"][0]["sources"] == [{"kind": "preset", "ref": "main"}]
    last = data["messages"][-1]
    assert last["role"] == "user" and last["content"] == "Tell me about the forest"
    assert {"kind": "history", "ref": "input"} in last["sources"]
    books = {e["book"] for e in data["world_info"]}
    assert "worldinfo_Eldoria" in books
    assert data["budget"]["available"] == 4095 - 300 - 3
    assert set(data["macro"]) >= {"warnings", "traces", "mutations"}
    # The macro engine is wired in: names are expanded and every evaluation is traced.
    assert data["messages"][0]["content"] == (
        "Write Seraphina's next reply in a fictional chat between Seraphina and Ann."
    )
    assert data["macro"]["traces"] and data["macro"]["phase"] == "dry_run"


def test_dry_run_honours_max_context(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "--card",
        CARD,
        "--history",
        CHAT,
        "--message",
        "hi",
        "--max-context",
        "900",
        "--json",
    )
    data = json.loads(out)
    assert code == 0 and data["budget"]["max_context"] == 900
    assert data["budget"]["total_tokens"] <= data["budget"]["available"] or data["warnings"]


def test_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--card", CARD, "--message", "hello there")
    assert code == 0 and "hello there" in out and "tokens" in out


@pytest.mark.parametrize(
    ("name", "content", "field"),
    [
        (
            "bad_preset.json",
            '{"prompts": [{"identifier": "x", "role": "narrator"}]}',
            "prompts[0].role",
        ),
        ("bad_book.json", '{"entries": {"0": {"position": 42}}}', "entries.0.position"),
        ("broken.json", '{"entries": ', "invalid JSON"),
    ],
)
def test_malformed_file_names_file_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, content: str, field: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    flag = "--preset" if "preset" in name else "--worldbook"
    code, _, err = _run(capsys, "--card", CARD, flag, str(path), "--message", "x")
    assert code == 1 and name in err and field in err


def test_malformed_history_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text('{"user_name": "A"}\n{"name": "A", "mes": 5}\n', encoding="utf-8")
    code, _, err = _run(capsys, "--card", CARD, "--history", str(path), "--message", "x")
    assert code == 1 and "chat.jsonl" in err and "line 2" in err
