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


def _regex_file(tmp_path: Path) -> str:
    def script(name: str, find: str, replace: str, **kw: object) -> dict[str, object]:
        return {
            "id": name,
            "scriptName": name,
            "findRegex": find,
            "replaceString": replace,
            "placement": [1],
            "promptOnly": True,
            **kw,
        }

    scripts = [
        script("Greet", "/hello/", "hello {{char}}"),
        script("Trim", r"/\[(.+)\]/", "<$1>", trimStrings=["{{user}}: "]),
        script("Raw", "/{{user}}/g", "U", substituteRegex=1),
        script("Escaped", "/{{char}}/g", "C", substituteRegex=2),
        script("Broken", "/(/", "x"),
    ]
    path = tmp_path / "scripts.json"
    path.write_text(json.dumps(scripts), encoding="utf-8")
    return str(path)


def test_dry_run_regex_scripts_see_macros(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = _run(
        capsys,
        "--card",
        CARD,
        "--regex",
        _regex_file(tmp_path),
        "--user",
        "A.n+",
        "--message",
        "hello [A.n+: hi] A.n+ Annn",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    # Greet: "hello" -> "hello Seraphina"; Trim drops "A.n+: " from the capture; Raw's find
    # is the pattern A.n+ (so "A.n" of the name and all of "Annn"); Escaped turns the
    # character's name, inserted by Greet, into C.
    assert data["messages"][-1]["content"] == "hello C <hi> U+ U"


def test_dry_run_names_a_broken_script_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    regex = _regex_file(tmp_path)
    code, out, _ = _run(capsys, "--card", CARD, "--regex", regex, "--message", "x", "--json")
    found = [w for w in json.loads(out)["warnings"] if "Broken" in w]
    assert code == 0 and len(found) == 1 and found[0].count("Broken") == 1
    code, text, _ = _run(capsys, "--card", CARD, "--regex", regex, "--message", "x")
    lines = [line for line in text.splitlines() if "Broken" in line]
    assert code == 0 and len(lines) == 1 and lines[0].count("Broken") == 1


def test_dry_run_filters_world_entries_by_card_file_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def entry(uid: int, names: list[str]) -> dict[str, object]:
        return {
            "uid": uid,
            "key": [],
            "content": f"FOR-{uid}",
            "constant": True,
            "characterFilter": {"isExclude": False, "names": names, "tags": []},
        }

    path = tmp_path / "filtered.json"
    book = {"entries": {"1": entry(1, [Path(CARD).stem]), "2": entry(2, ["Seraphina"])}}
    path.write_text(json.dumps(book), encoding="utf-8")
    code, out, _ = _run(
        capsys, "--card", CARD, "--worldbook", str(path), "--message", "x", "--json"
    )
    contents = [e["content"] for e in json.loads(out)["world_info"]]
    assert code == 0 and "FOR-1" in contents and "FOR-2" not in contents
