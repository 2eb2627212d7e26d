"""Issue 15 "Must show": every real SillyTavern file imports and assembles with the default preset.

The files in ``../shared/realworld/`` (listed in its manifest.json) are read in place, never
copied. Each goes through the service import the front ends use, then a dry run assembles the
prompt the next message would get:

- a card, as the session's character: its name (the default main prompt names it) and a line
  of its description, personality or scenario are in the prompt;
- a world book, bound to a session with a small card: a message names the key of one of its
  keyed entries; every entry the dry run activates is in the prompt (with the default preset's
  small world-info budget, and again with a preset roomy enough for the whole book, where the
  keyed entry must be among them; a book without keyed entries must activate its constant
  ones);
- a regex file, bound: every script compiles and runs, and the prompt assembles;
- a preset, as the session's preset with a small card: the message and a line of one of the
  preset's enabled prompts are in it;
- a chat, imported with its own card when the manifest's paths name one (a chat saved in the
  folder of a card of the same repository): its last message is in the prompt of its branch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from engine.formats.cards import parse_card
from engine.formats.json_input import load_object
from engine.formats.preset import parse_preset
from engine.formats.regex_scripts import RegexScript, load_regex_file
from engine.formats.st_chat import parse_chat
from engine.formats.worldbook import POS_OUTLET, WorldEntry, parse_worldbook
from engine.prompt.jsregex import parse_script_regex
from engine.prompt.regex_run import run_script
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.conftest import SHARED
from tests.test_turns.conftest import KEY

REALWORLD = SHARED / "realworld"
MESSAGE = "Hello there, how are you today?"
SMALL_CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Mira",
        "description": "Mira keeps the lighthouse on the northern cape.",
        "first_mes": "The lamp is lit.",
    },
}
SMALL_DESCRIPTION = "Mira keeps the lighthouse on the northern cape."
ROOMY_PRESET = json.dumps({"openai_max_context": 1_000_000}).encode()
"""A preset whose context leaves room for every entry of a book (world-info budget 25%)."""
_REGEX_KEY = re.compile(r"^/(.+)/([a-zA-Z]*)$", re.DOTALL)
"""A world-info key SillyTavern reads as a regular expression."""
_NAMES = re.compile(r"\{\{(char|user)\}\}", re.IGNORECASE)
"""The name macros, which the small card and the dry run fill with Mira and User."""


def _manifest() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads((REALWORLD / "manifest.json").read_text("utf-8"))
    return entries


def _params() -> list[Any]:
    return [pytest.param(e, id=f"{e['kind']}/{e['dest']}") for e in _manifest()]


def _read(path: Path) -> bytes:
    return path.read_bytes()


def _file(entry: Mapping[str, Any]) -> Path:
    return REALWORLD / str(entry["kind"]) / str(entry["dest"])


def _card_of_chat(chat: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The card the chat was saved with: SillyTavern keeps a chat in a folder named after its
    card's file, so a card of the same repository whose file stem is that folder."""
    folder = PurePosixPath(chat["path"]).parent.name
    for entry in _manifest():
        if (
            entry["kind"] == "cards"
            and entry["repo"] == chat["repo"]
            and PurePosixPath(entry["path"]).stem == folder
        ):
            return entry
    return None


def _text(prompt: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for message in prompt["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)


def _plain_line(text: str) -> str | None:
    """The longest line of ``text`` no macro, template or tag can change, if any."""
    lines = [
        line.strip()
        for line in text.splitlines()
        if not any(mark in line for mark in ("{{", "}}", "<", ">", "${"))
    ]
    lines = [line for line in lines if len(line) >= 8]
    return max(lines, key=len) if lines else None


async def _small_card(service: TavernService) -> None:
    await service.import_asset(KEY, "card", "Mira.json", json.dumps(SMALL_CARD).encode())


async def _check_card(service: TavernService, entry: Mapping[str, Any], data: bytes) -> None:
    card = parse_card(data, source=entry["dest"])
    summary = await service.import_asset(KEY, "card", entry["dest"], data)
    assert (await service.session_info(KEY)).character == summary.name == card.name
    text = _text(await service.dry_run(KEY, MAIN_BRANCH, MESSAGE))
    assert MESSAGE in text
    assert card.name in text
    for field in (card.description, card.personality, card.scenario):
        line = _plain_line(field)
        if line is not None:
            assert line in text, f"{line!r:.80} is not in the prompt"
            break


def _is_regex_key(key: str) -> bool:
    return _REGEX_KEY.match(key) is not None


def _scriptable(entry: WorldEntry) -> bool:
    """An entry a plain message must trigger: enabled, keyed by plain text, no secondary keys,
    no chance, delay, group, outlet or generation-type condition, not filtered out for the
    small card."""
    names = entry.character_filter.names
    return (
        not entry.disable
        and not entry.constant
        and bool(entry.keys)
        and bool(entry.keys[0].strip())
        and not _is_regex_key(entry.keys[0])
        and not entry.secondary_keys
        and (not entry.use_probability or entry.probability >= 100)
        and not entry.delay
        and not entry.delay_until_recursion
        and not entry.group
        and (entry.character_filter.is_exclude or not names)
        and not entry.character_filter.tags
        and "Mira" not in names
        and entry.position != POS_OUTLET
        and (not entry.triggers or "normal" in entry.triggers)
        and _plain_line(entry.content) is not None
    )


def _keyed(entries: Sequence[WorldEntry]) -> WorldEntry | None:
    """The shortest entry a plain message must trigger, if the book has one."""
    keyed = [e for e in entries if _scriptable(e)]
    return min(keyed, key=lambda e: len(e.content)) if keyed else None


def _activated(prompt: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = prompt["world_info"]
    return found


def _shown_where_activated(prompt: Mapping[str, Any]) -> None:
    """Every activated entry's text is in the prompt (SillyTavern places every entry it
    activates; outlets only where a macro asks for them)."""
    text = _text(prompt)
    for item in _activated(prompt):
        line = _plain_line(str(item["content"]))
        if item.get("position") == "outlet" or line is None:
            continue
        assert line in text, f"activated entry {item['uid']} ({item['position']}) is not shown"


async def _check_worldbook(service: TavernService, entry: Mapping[str, Any], data: bytes) -> None:
    book = parse_worldbook(load_object(data, source=entry["dest"]), source=entry["dest"])
    await _small_card(service)
    summary = await service.import_asset(KEY, "worldbook", entry["dest"], data)
    assert summary.name in (await service.session_info(KEY)).worldbooks
    wanted = _keyed(book.entries)
    message = MESSAGE if wanted is None else f"{MESSAGE} {wanted.keys[0]} ."
    # With the default preset's 4095-token context the world-info budget is small: entries
    # past it are left out, as SillyTavern leaves them out; what is activated is shown.
    _shown_where_activated(await service.dry_run(KEY, MAIN_BRANCH, message))
    # With room for the whole book, the keyed entry (or every constant one) is in the prompt.
    await service.import_asset(KEY, "preset", "roomy.json", ROOMY_PRESET)
    prompt = await service.dry_run(KEY, MAIN_BRANCH, message)
    _shown_where_activated(prompt)
    uids = {w["uid"] for w in _activated(prompt)}
    if wanted is not None:
        assert wanted.uid in uids, f"entry {wanted.uid} was not activated by {wanted.keys[0]!r}"
    constants = {e.uid for e in book.entries if e.constant and not e.disable}
    assert uids or not constants, "no entry was activated"
    assert uids, "the book shows nothing"


def _runs(script: RegexScript) -> None:
    assert parse_script_regex(script.find_regex) is not None, script.find_regex
    run = run_script(script, f'{MESSAGE} *waves* "hi" <b>ok</b>  done.')
    assert not run.warnings, run.warnings


async def _check_regex(service: TavernService, entry: Mapping[str, Any], data: bytes) -> None:
    _, scripts = load_regex_file(data, source=entry["dest"])
    assert scripts
    for script in scripts:
        if not script.disabled:
            _runs(script)
    await _small_card(service)
    summary = await service.import_asset(KEY, "regex", entry["dest"], data)
    assert summary.name in await service.list_assets(KEY, "regex")
    text = _text(await service.dry_run(KEY, MAIN_BRANCH, MESSAGE))
    assert SMALL_DESCRIPTION in text


async def _check_preset(service: TavernService, entry: Mapping[str, Any], data: bytes) -> None:
    preset = parse_preset(load_object(data, source=entry["dest"]), source=entry["dest"])
    await _small_card(service)
    summary = await service.import_asset(KEY, "preset", entry["dest"], data)
    assert (await service.session_info(KEY)).preset == summary.name
    text = _text(await service.dry_run(KEY, MAIN_BRANCH, MESSAGE))
    assert MESSAGE in text
    # The preset's own prompts are used: a line of one of its enabled prompts is in the prompt.
    lines = [
        _plain_line(
            _NAMES.sub(lambda m: "Mira" if "char" in m[0].lower() else "User", prompt.content)
        )
        for slot in preset.effective_order()
        if slot.enabled and (prompt := preset.prompt(slot.identifier)) is not None
    ]
    assert any(line in text for line in lines if line is not None), "no prompt of the preset"


async def _check_chat(service: TavernService, entry: Mapping[str, Any], data: bytes) -> None:
    card = _card_of_chat(entry)
    if card is None:
        await _small_card(service)
    else:
        await service.import_asset(KEY, "card", card["dest"], _read(_file(card)))
    log = parse_chat(data, source=entry["dest"])
    summary = await service.import_asset(KEY, "chat", entry["dest"], data)
    branch = summary.details["branch"]
    text = _text(await service.dry_run(KEY, branch, MESSAGE))
    shown = [e for e in log.entries if not e.is_hidden and e.text.strip()]
    assert shown, "the chat has no message"
    line = _plain_line(shown[-1].text)
    if line is not None:
        assert line in text, f"the chat's last message {line!r:.60} is not in the prompt"


CHECKS = {
    "cards": _check_card,
    "worldbooks": _check_worldbook,
    "regex": _check_regex,
    "presets": _check_preset,
    "chats": _check_chat,
}


def test_the_manifest_lists_every_file() -> None:
    listed = {(e["kind"], e["dest"]) for e in _manifest()}
    on_disk = {
        (folder.name, path.name)
        for folder in REALWORLD.iterdir()
        if folder.is_dir()
        for path in folder.iterdir()
    }
    assert listed == on_disk
    assert {kind for kind, _ in listed} == set(CHECKS)
    assert len(listed) == 59


@pytest.mark.parametrize("entry", _params())
async def test_every_real_file_imports_and_assembles(
    service: TavernService, entry: Mapping[str, Any]
) -> None:
    await CHECKS[entry["kind"]](service, entry, _read(_file(entry)))


def test_chats_find_the_cards_they_were_saved_with() -> None:
    paired = {
        e["dest"]: card["dest"]
        for e in _manifest()
        if e["kind"] == "chats" and (card := _card_of_chat(e)) is not None
    }
    assert paired == {
        "st2023_Megumin.jsonl": "st2023_Megumin_v1.png",
        "mgb_DrGregoryHouse.jsonl": "mgb_DrGregoryHouse_v2.png",
        "stbl_Assistant_2026.jsonl": "stbl_Assistant_empty_v2v3.png",
        "stbl_JasmineRegex_2025.jsonl": "stbl_JasmineRegexCarrier_v3.png",
    }
