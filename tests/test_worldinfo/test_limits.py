"""Every named limit of world info and assembly, exercised."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import FormatError
from engine.prompt import worldinfo
from engine.prompt.history import MAX_NAME_LENGTH, sanitize_name
from engine.prompt.native import PromptGraph
from engine.prompt.wi_sources import WorldInfoSettings
from engine.prompt.wi_timed import TimedState
from tests.test_worldinfo.helpers import book, entry, scan, uids


def test_scan_never_reads_past_max_scan_messages() -> None:
    limit = worldinfo.MAX_SCAN_MESSAGES
    chat = ["old dragon"] + ["x"] * limit  # the key sits one message past the limit
    b = book(entry(1, "dragon", scan_depth=limit + 500))
    assert uids(scan(b, chat)) == set()
    assert uids(scan(b, chat[1:-1] + ["dragon"])) == {1}


def test_scan_passes_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worldinfo, "MAX_SCAN_PASSES", 3)
    chain = book(*[entry(i, f"k{i}", content=f"k{i + 1}") for i in range(10)])
    result = scan(chain, ["k0"], settings=WorldInfoSettings(recursive=True))
    assert result.passes == 3 and uids(result) == {0, 1, 2}


def test_completion_names_are_cut_to_max_name_length() -> None:
    assert sanitize_name("Ann B.") == "Ann_B_"
    assert len(sanitize_name("n" * 200)) == MAX_NAME_LENGTH


def test_dry_run_refuses_files_over_max_input_bytes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from bot.cli_commands import prompt as command

    monkeypatch.setattr(command, "MAX_INPUT_BYTES", 10)
    path = tmp_path / "big.json"
    path.write_text("{" + " " * 20 + "}", encoding="utf-8")
    with pytest.raises(FormatError, match="MAX_INPUT_BYTES"):
        command._read(path)


@pytest.mark.parametrize(
    "data",
    [None, "x", {"sticky": []}, {"cooldown": {"B.1": 5}}, {"sticky": {"B.1": {"start": "a"}}}],
)
def test_timed_state_rejects_malformed_json(data: object) -> None:
    if data is None:
        assert TimedState.from_json(data) == TimedState()
        return
    with pytest.raises(FormatError):
        TimedState.from_json(data)


@pytest.mark.parametrize(
    "data",
    [
        "x",
        [1],
        [{"kind": "nope"}],
        [{"kind": "static_text", "role": "bot"}],
        [{"kind": "static_text", "depth": -1}],
    ],
)
def test_prompt_graph_rejects_malformed_nodes(data: object) -> None:
    with pytest.raises(FormatError):
        PromptGraph.from_json(data, source="graph.json")
