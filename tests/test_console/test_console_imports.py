"""Console ``/import``: each real SillyTavern file is taken for what it is, a file of another
kind is refused in one line naming the file and what it looks like (nothing stored), and a
chat says which branch it became."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from adapters.console.frontend import ConsoleFrontend
from adapters.console.importing import guess_kind
from engine.errors import FormatError
from engine.turns.api import SessionKey
from engine.turns.service import TavernService
from tests.conftest import SHARED
from tests.test_presets.test_preset_kinds import OTHER_KINDS

pytestmark = pytest.mark.timeout(60)
KEY = SessionKey(platform="console", realm="local", key="imports")
REALWORLD = SHARED / "realworld"
FOLDER_KINDS = {
    "cards": "card",
    "presets": "preset",
    "worldbooks": "worldbook",
    "regex": "regex",
    "chats": "chat",
}
NOT_IMPORTED = {k: v for k, v in OTHER_KINDS.items() if k != "worldbook"}


@pytest.mark.parametrize(
    "path",
    sorted(p for p in REALWORLD.glob("*/*") if p.parent.name in FOLDER_KINDS),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_real_file_is_guessed_as_what_it_is(path: Path) -> None:
    # The 2023 Chat Completion preset (no prompts) used to be taken for a card.
    assert guess_kind(path, path.read_bytes()) == FOLDER_KINDS[path.parent.name]


@pytest.mark.parametrize("kind", sorted(NOT_IMPORTED))
def test_a_file_of_no_importable_kind_is_refused_by_the_guess(kind: str) -> None:
    data, said = NOT_IMPORTED[kind]
    with pytest.raises(FormatError) as caught:
        guess_kind(Path(f"{kind}.json"), json.dumps(data).encode())
    message = str(caught.value)
    assert message.startswith(f"{kind}.json: {said}") and "\n" not in message, message


async def _console(service: TavernService, *lines: str) -> list[dict[str, object]]:
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, out=out, jsonl=True)
    for line in lines:
        assert await console.handle_line(line)
    return [json.loads(x) for x in out.getvalue().splitlines()]


async def test_wrong_kinds_are_refused_in_one_line_and_nothing_is_stored(
    tmp_path: Path, offline_engine: TavernService
) -> None:
    await offline_engine.open_session(KEY)
    instruct = tmp_path / "Alpaca.json"
    instruct.write_text(json.dumps(OTHER_KINDS["instruct"][0]), encoding="utf-8")
    sampler = tmp_path / "Sampler.json"
    sampler.write_text(json.dumps(OTHER_KINDS["textgen"][0]), encoding="utf-8")
    book = REALWORLD / "worldbooks" / "stbl_CafeManual.json"
    card = REALWORLD / "cards" / "stc_Amy_v3.png"
    rows = await _console(
        offline_engine,
        f"/import {instruct}",
        f"/import {instruct} preset",
        f"/import {sampler} preset",
        f"/import {book} preset",
        f"/import {card} worldbook",
    )
    assert [r["type"] for r in rows] == ["error"] * 5, rows
    messages = [str(r["message"]) for r in rows]
    assert all("\n" not in m for m in messages)
    assert messages[0].startswith("Alpaca.json: this is a SillyTavern instruct template;")
    assert messages[1].startswith("Alpaca.json: this is a SillyTavern instruct template")
    assert messages[2].startswith(
        "Sampler.json: this is a SillyTavern text-completion sampler preset"
    )
    assert messages[3] == (
        "stbl_CafeManual.json: this is a world book, not a Chat Completion preset; "
        "/import stbl_CafeManual.json worldbook"
    )
    assert messages[4] == (
        "stc_Amy_v3.png: this is a character card, not a world book; /import stc_Amy_v3.png card"
    )
    for kind in ("card", "preset", "worldbook"):
        assert await offline_engine.list_assets(KEY, kind) == []


async def test_a_chat_import_says_which_branch_it_became(
    offline_engine: TavernService,
) -> None:
    await offline_engine.open_session(KEY)
    chat = REALWORLD / "chats" / "st2023_Megumin.jsonl"
    rows = await _console(offline_engine, f"/import {chat}")
    info = await offline_engine.session_info(KEY)
    branch = next(b for b in info.branches if b.name != "main")
    assert branch.floors >= 1
    assert rows[0]["message"] == (
        f"imported chat st2023_Megumin.jsonl as branch {branch.name} ({branch.floors_text}); "
        f"/switch {branch.name} to play it"
    )
    assert rows[0]["branch"] == branch.name
    rows = await _console(offline_engine, f"/switch {branch.name}", "/branches")
    assert rows[0]["message"] == f"now on branch {branch.name}"
