"""What a file offered to ``/import`` is, before the engine reads it.

:func:`looks_like` tells a card, a Chat Completion preset, a world book, a regex script and a
chat apart by the file's name and keys, and names the SillyTavern files tavernbot does not
play (an instruct or context template, a text-completion sampler preset) by the keys only
they use (:func:`engine.formats.preset_kinds.other_kind`). :func:`guess_kind` gives the kind to
import or refuses the file in one line; :func:`check_kind` refuses a kind the user named that
the file plainly is not (a world book offered as a preset), naming what it looks like.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from engine.errors import FormatError
from engine.formats.png import is_png
from engine.formats.preset_kinds import CHAT_COMPLETION_KEYS, other_kind
from engine.turns.api import AssetKind, ImportSummary

__all__ = ["IMPORT_KINDS", "Looks", "check_kind", "guess_kind", "imported_text", "looks_like"]

IMPORT_KINDS: Final[dict[str, AssetKind]] = {".png": "card", ".jsonl": "chat"}
"""File name endings that say the kind by themselves."""
_WHAT: Final[dict[AssetKind, str]] = {
    "card": "a character card",
    "preset": "a Chat Completion preset",
    "worldbook": "a world book",
    "regex": "a regex script",
    "chat": "a SillyTavern chat",
    "group": "a SillyTavern group definition",
}
_CARD_FIELDS: Final = frozenset({"first_mes", "personality", "description", "mes_example"})
_GROUP_FIELDS: Final = frozenset({"activation_strategy", "generation_mode", "disabled_members"})
"""Keys only a group definition (``groups/<id>.json``) has beside its ``members``."""
_IMPORTS: Final = (
    "tavernbot imports character cards, Chat Completion presets, world books, regex scripts, "
    "chats and group definitions"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Looks:
    """What a file looks like: the kind to import it as (None: none), and in words (None:
    nothing recognisable, left to the engine's reader to say what is wrong)."""

    kind: AssetKind | None
    what: str | None


def looks_like(path: Path, data: bytes) -> Looks:
    """What ``data`` (the file ``path``) looks like."""
    suffix = path.suffix.lower()
    if is_png(data):
        return _known("card")
    if suffix in IMPORT_KINDS:
        return _known(IMPORT_KINDS[suffix])
    try:
        parsed: Any = json.loads(data.decode("utf-8-sig"))
    except ValueError:  # UnicodeDecodeError is one
        return Looks(kind=None, what=None)
    if isinstance(parsed, list):
        if parsed and all(isinstance(x, dict) and "findRegex" in x for x in parsed):
            return _known("regex")
        return Looks(kind=None, what=None)
    if not isinstance(parsed, dict):
        return Looks(kind=None, what=None)
    keys = set(parsed)
    inner = parsed.get("data")
    fields = set(inner) if isinstance(inner, dict) else keys
    if "findRegex" in keys:
        return _known("regex")
    if keys & CHAT_COMPLETION_KEYS:
        return _known("preset")
    if "entries" in keys:
        return _known("worldbook")
    if "members" in keys and keys & _GROUP_FIELDS:
        return _known("group")
    if str(parsed.get("spec", "")).startswith("chara_card") or (
        "name" in fields and fields & _CARD_FIELDS
    ):
        return _known("card")
    return Looks(kind=None, what=other_kind(parsed))


def guess_kind(path: Path, data: bytes) -> AssetKind:
    """The kind to import ``data`` as; FormatError (one line naming the file and what it
    looks like) for a file of no kind tavernbot imports."""
    looks = looks_like(path, data)
    if looks.kind is not None:
        return looks.kind
    if looks.what is not None:
        raise FormatError(f"this is {looks.what}; {_IMPORTS}", source=path.name)
    raise FormatError(
        "cannot tell what this file is (not a PNG card, a .jsonl chat or a JSON card, preset, "
        "world book, regex script or group definition); name the kind: /import FILE "
        "card|preset|worldbook|regex|chat|group",
        source=path.name,
    )


def check_kind(path: Path, data: bytes, kind: AssetKind) -> None:
    """Refuse importing ``data`` as ``kind`` when it plainly is something else (FormatError
    naming the file, what it looks like and how to import it if it can be)."""
    looks = looks_like(path, data)
    if looks.what is None or looks.kind == kind:
        return
    hint = f"/import {path.name} {looks.kind}" if looks.kind is not None else _IMPORTS
    raise FormatError(f"this is {looks.what}, not {_WHAT[kind]}; {hint}", source=path.name)


def imported_text(path: Path, summary: ImportSummary) -> str:
    """The line that confirms an import: a chat says the branch it became and how to play
    it; an asset, that it is in use in this session."""
    if summary.kind == "chat":
        floors = int(summary.details.get("floors", 0))
        count = f"{floors} floor" + ("" if floors == 1 else "s")
        return (
            f"imported chat {path.name} as branch {summary.name} ({count}); "
            f"/switch {summary.name} to play it"
        )
    if summary.kind == "group":
        members = ", ".join(str(m) for m in summary.details.get("members", ()))
        return f"imported group {summary.name!r}: {members} play in this session (/members)"
    return f"imported {summary.kind} {summary.name!r}"


def _known(kind: AssetKind) -> Looks:
    return Looks(kind=kind, what=_WHAT[kind])
