"""Telling what a document is before importing it: card, preset, world book, regex or chat.

Telegram documents arrive with a file name and bytes. PNG cards must carry a ``chara`` or
``ccv3`` text chunk; JSON files are classified by their keys; ``.jsonl`` files are chats. A
caption naming a kind (``preset``, ``/import worldbook`` ...) overrides the guess. Malformed
files raise :class:`engine.errors.FormatError` saying what is wrong with which file.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any, get_args

from engine.errors import FormatError
from engine.formats.preset_kinds import CHAT_COMPLETION_KEYS, refuse_other_kinds
from engine.turns.api import AssetKind

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CARD_CHUNK_KEYS = frozenset({b"chara", b"ccv3"})
KINDS: tuple[AssetKind, ...] = get_args(AssetKind)
KIND_WORDS: dict[str, AssetKind] = {
    "card": "card",
    "character": "card",
    "preset": "preset",
    "worldbook": "worldbook",
    "lorebook": "worldbook",
    "world": "worldbook",
    "regex": "regex",
    "chat": "chat",
}
_UNKNOWN_JSON = (
    "could not tell what this file is: a character card has 'spec' or 'name' with "
    "'first_mes', a world book has 'entries', a preset has 'prompts' or 'prompt_order', a regex "
    "script has 'findRegex'; or name the kind in the caption (card, preset, worldbook, regex)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Detected:
    """What a file looks like: its kind and a few facts for the confirmation message."""

    kind: AssetKind
    facts: dict[str, Any] = field(default_factory=dict)


def _png_text_keys(data: bytes, filename: str) -> set[bytes]:
    keys: set[bytes] = set()
    pos = len(PNG_SIGNATURE)
    while pos + 8 <= len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if pos + 12 + length > len(data):
            raise FormatError("the PNG is cut short (a chunk runs past the end)", source=filename)
        if kind in (b"tEXt", b"iTXt", b"zTXt"):
            keys.add(body.split(b"\x00", 1)[0])
        if kind == b"IEND":
            break
        pos += 12 + length
    return keys


def _caption_kind(caption: str | None) -> AssetKind | None:
    for word in (caption or "").lower().replace("/import", " ").split():
        if word in KIND_WORDS:
            return KIND_WORDS[word]
    return None


def _json_kind(parsed: Any) -> Detected | None:
    if isinstance(parsed, list):
        if parsed and all(isinstance(x, dict) and "findRegex" in x for x in parsed):
            return Detected(kind="regex", facts={"scripts": len(parsed)})
        return None
    if not isinstance(parsed, dict):
        return None
    inner = parsed.get("data")
    data: dict[str, Any] = inner if isinstance(inner, dict) else parsed
    if str(parsed.get("spec", "")).startswith("chara_card") or (
        "name" in data and ("first_mes" in data or "personality" in data or "description" in data)
    ):
        greetings = len(data.get("alternate_greetings") or []) + (
            1 if data.get("first_mes") else 0
        )
        return Detected(kind="card", facts={"name": data.get("name"), "greetings": greetings})
    if "entries" in parsed:
        entries = parsed["entries"]
        count = len(entries) if isinstance(entries, dict | list) else 0
        return Detected(kind="worldbook", facts={"entries": count})
    if "findRegex" in parsed:
        return Detected(kind="regex", facts={"scripts": 1})
    if CHAT_COMPLETION_KEYS & parsed.keys():  # prompts, prompt_order, or a legacy main_prompt
        return Detected(kind="preset", facts={"prompts": len(parsed.get("prompts") or [])})
    return None


def detect(filename: str, data: bytes, caption: str | None = None) -> Detected:
    """Classify a document, or raise FormatError with a message fit for the user."""
    if not data:
        raise FormatError("the file is empty", source=filename)
    forced = _caption_kind(caption)
    if data.startswith(PNG_SIGNATURE):
        if forced not in (None, "card"):
            raise FormatError(
                f"a PNG can only be a character card, not a {forced}", source=filename
            )
        keys = _png_text_keys(data, filename)
        if not keys & CARD_CHUNK_KEYS:
            raise FormatError(
                "this PNG has no character card inside (no 'chara' or 'ccv3' text chunk)",
                source=filename,
            )
        return Detected(kind="card", facts={"format": "PNG"})
    if filename.lower().endswith(".jsonl"):
        lines = [line for line in data.splitlines() if line.strip()]
        for number, line in enumerate(lines, start=1):
            try:
                json.loads(line)
            except ValueError as exc:
                raise FormatError(
                    f"line {number} is not valid JSON ({exc})", source=filename
                ) from exc
        return Detected(kind="chat", facts={"lines": len(lines)})
    try:
        parsed = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise FormatError("not a PNG card and not UTF-8 text", source=filename) from exc
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", source=filename
        ) from exc
    found = _json_kind(parsed)
    if forced is not None:
        return Detected(kind=forced, facts=found.facts if found and found.kind == forced else {})
    if found is None:
        if isinstance(parsed, dict):  # an instruct template or a sampler preset: say so
            refuse_other_kinds(parsed, source=filename)
        raise FormatError(_UNKNOWN_JSON, source=filename)
    return found
