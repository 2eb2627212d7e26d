"""SillyTavern character cards: V1, V2 and V3, as JSON or as PNG with embedded metadata.

A card is read into :class:`CharacterCard`, a neutral engine value. The original JSON mapping is
kept in ``raw`` so that an export writes back every field the engine does not understand (ST's own
rule: unknown keys in ``data``, ``data.extensions`` and the book must survive).
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from engine.errors import FormatError
from engine.formats.json_input import as_int, get_str, get_str_list, load_object, type_name
from engine.formats.png import (
    blank_png,
    is_png,
    read_text_chunks,
    replace_text_chunks,
    strip_text_chunks,
)

CardSpec = Literal["chara_card_v1", "chara_card_v2", "chara_card_v3"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DepthPrompt:
    """The card's "Character's Note": text injected into the chat at ``depth`` with ``role``."""

    text: str
    depth: int
    role: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CharacterCard:
    """One character card. Mappings hold plain JSON values and must be treated as read-only."""

    name: str
    description: str = ""
    personality: str = ""
    scenario: str = ""
    first_mes: str = ""
    mes_example: str = ""
    creator_notes: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""
    alternate_greetings: tuple[str, ...] = ()
    group_only_greetings: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    creator: str = ""
    character_version: str = ""
    depth_prompt: DepthPrompt | None = None
    talkativeness: float = 0.5
    character_book: Mapping[str, object] | None = None
    extensions: Mapping[str, object] = field(default_factory=dict)
    spec: CardSpec = "chara_card_v2"
    raw: Mapping[str, object] = field(default_factory=dict)
    avatar: bytes | None = None


# A card file bigger than this is refused before any parsing (avatars are a few MB at most).
MAX_CARD_BYTES = 64 * 1024 * 1024
CARD_CHUNK_KEYWORDS = ("ccv3", "chara")
MAX_CARD_FIELD_CHARS: Final = 200_000
"""Longest text field of an imported card (description, a greeting, ...): about 50k tokens,
far beyond real cards. A longer field would overflow the context of every turn, so the import
is refused naming the field; cutting it would silently change the card (a sentence or a macro
block cut in half), which SillyTavern users do not expect of an import."""
_TEXT_FIELDS = (
    "name",
    "description",
    "personality",
    "scenario",
    "first_mes",
    "mes_example",
    "creator_notes",
    "system_prompt",
    "post_history_instructions",
    "creator",
    "character_version",
)
DEFAULT_TALKATIVENESS: Final = 0.5
"""SillyTavern's ``talkativeness_default``: how likely a group member is to answer a turn it is
not named in, when its card does not say."""
_DEFAULT_DEPTH = 4
_CREATOR_NOTES_PLACEHOLDER = "Creator's notes go here."


def parse_card(data: bytes, *, source: str) -> CharacterCard:
    """Read a card from PNG or JSON bytes (sniffed by the PNG signature).

    PNG: the ``ccv3`` tEXt chunk is preferred over ``chara`` (as in SillyTavern and the V3
    spec); the PNG without those chunks becomes ``avatar``. Any malformation raises FormatError.
    """
    if len(data) > MAX_CARD_BYTES:
        raise FormatError(
            f"file is {len(data)} bytes, over MAX_CARD_BYTES={MAX_CARD_BYTES}", source=source
        )
    if is_png(data):
        obj = _payload_from_png(data, source=source)
        avatar = strip_text_chunks(data, CARD_CHUNK_KEYWORDS, source=source)
        return _check_lengths(card_from_mapping(obj, source=source, avatar=avatar), source)
    if source.lower().endswith(".png"):
        # Named as a picture but not one: a JSON card is still read (its content decides), but
        # anything else is named for what it was meant to be, not reported as bad JSON.
        try:
            obj = load_object(data, source=source, what="a character card object")
        except FormatError:
            raise FormatError(
                "not a PNG image (no PNG signature) and not a JSON card either", source=source
            ) from None
    else:
        obj = load_object(data, source=source, what="a character card object")
    return _check_lengths(card_from_mapping(obj, source=source), source)


def _check_lengths(card: CharacterCard, source: str) -> CharacterCard:
    """Refuse a card with a text field over :data:`MAX_CARD_FIELD_CHARS` (at import only:
    a card already stored is read as it is)."""
    prefix = "" if card.spec == "chara_card_v1" else "data."
    texts: list[tuple[str, str]] = [(name, getattr(card, name)) for name in _TEXT_FIELDS]
    for name in ("alternate_greetings", "group_only_greetings"):
        texts.extend((f"{name}[{i}]", text) for i, text in enumerate(getattr(card, name)))
    if card.depth_prompt is not None:
        texts.append(("extensions.depth_prompt.prompt", card.depth_prompt.text))
    for name, text in texts:
        if len(text) > MAX_CARD_FIELD_CHARS:
            raise FormatError(
                f"{len(text)} characters, over MAX_CARD_FIELD_CHARS={MAX_CARD_FIELD_CHARS}",
                source=source,
                field=prefix + name,
            )
    return card


def _payload_from_png(data: bytes, *, source: str) -> dict[str, object]:
    texts = read_text_chunks(data, source=source)
    present = [k for k in CARD_CHUNK_KEYWORDS if k in texts]
    if not present:
        raise FormatError(
            "PNG has no character metadata (no 'ccv3' or 'chara' tEXt chunk)",
            source=source,
            field="png",
        )
    first_error: FormatError | None = None
    for keyword in present:
        try:
            return _decode_payload(texts[keyword], source=source, field=f"png:{keyword}")
        except FormatError as exc:
            # A damaged ccv3 next to a good chara still imports, from the chara chunk.
            first_error = first_error or exc
    assert first_error is not None
    raise first_error


def _decode_payload(text: str, *, source: str, field: str) -> dict[str, object]:
    compact = "".join(text.split())
    compact += "=" * (-len(compact) % 4)  # tolerate stripped padding, as Node's decoder does
    try:
        raw = base64.b64decode(compact, altchars=None, validate=True)
    except (binascii.Error, ValueError):
        raise FormatError("not valid base64", source=source, field=field) from None
    return load_object(raw, source=source, field=field)


def card_from_mapping(
    obj: Mapping[str, object], *, source: str, avatar: bytes | None = None
) -> CharacterCard:
    """Build a card from an already decoded JSON object (V1, V2, V3 or Pygmalion)."""
    data = obj.get("data")
    if "spec" in obj and isinstance(data, Mapping):
        spec: CardSpec = "chara_card_v3" if obj.get("spec") == "chara_card_v3" else "chara_card_v2"
        return _from_v2(obj, data, spec=spec, source=source, avatar=avatar)
    if "spec" in obj and data is not None:
        raise FormatError(
            f"expected an object, got {type_name(data)}", source=source, field="data"
        )
    if "name" in obj:
        return _from_v1(obj, source=source, avatar=avatar)
    if "char_name" in obj:
        mapped = {
            "name": obj.get("char_name"),
            "description": obj.get("char_persona"),
            "first_mes": obj.get("char_greeting"),
            "mes_example": obj.get("example_dialogue"),
            "scenario": obj.get("world_scenario"),
        }
        return _from_v1(mapped, source=source, avatar=avatar, raw=obj)
    raise FormatError(
        "not a character card: no 'spec' with 'data', no 'name' and no 'char_name'",
        source=source,
        field="name",
    )


def _from_v1(
    obj: Mapping[str, object],
    *,
    source: str,
    avatar: bytes | None,
    raw: Mapping[str, object] | None = None,
) -> CharacterCard:
    def text(key: str) -> str:
        return get_str(obj, key, source=source, field=key)

    notes = text("creatorcomment") or text("creator_notes")
    if notes == _CREATOR_NOTES_PLACEHOLDER:
        notes = ""
    return CharacterCard(
        name=text("name"),
        description=text("description"),
        personality=text("personality"),
        scenario=text("scenario"),
        first_mes=text("first_mes"),
        mes_example=text("mes_example"),
        creator_notes=notes,
        tags=_tags(obj, source=source, field="tags"),
        talkativeness=_talkativeness(obj.get("talkativeness")),
        extensions={},
        spec="chara_card_v1",
        raw=dict(raw if raw is not None else obj),
        avatar=avatar,
    )


def _from_v2(
    obj: Mapping[str, object],
    data: Mapping[str, object],
    *,
    spec: CardSpec,
    source: str,
    avatar: bytes | None,
) -> CharacterCard:
    def text(key: str) -> str:
        # V2 wins over the V1 mirror; the mirror only fills keys `data` lacks.
        if data.get(key) is not None:
            return get_str(data, key, source=source, field=f"data.{key}")
        return get_str(obj, key, source=source, field=key)

    extensions = data.get("extensions")
    if extensions is None:
        extensions = {}
    if not isinstance(extensions, Mapping):
        raise FormatError(
            f"expected an object, got {type_name(extensions)}",
            source=source,
            field="data.extensions",
        )
    book = data.get("character_book")
    if book is not None and not isinstance(book, Mapping):
        raise FormatError(
            f"expected an object, got {type_name(book)}",
            source=source,
            field="data.character_book",
        )
    return CharacterCard(
        name=text("name"),
        description=text("description"),
        personality=text("personality"),
        scenario=text("scenario"),
        first_mes=text("first_mes"),
        mes_example=text("mes_example"),
        creator_notes=text("creator_notes") or text("creatorcomment"),
        system_prompt=text("system_prompt"),
        post_history_instructions=text("post_history_instructions"),
        alternate_greetings=get_str_list(
            data, "alternate_greetings", source=source, field="data.alternate_greetings"
        ),
        group_only_greetings=get_str_list(
            data, "group_only_greetings", source=source, field="data.group_only_greetings"
        ),
        tags=_tags(data if "tags" in data else obj, source=source, field="data.tags"),
        creator=text("creator"),
        character_version=text("character_version"),
        depth_prompt=_depth_prompt(extensions, source=source),
        talkativeness=_talkativeness(extensions.get("talkativeness")),  # as ST reads it
        character_book=book,
        extensions=extensions,
        spec=spec,
        raw=dict(obj),
        avatar=avatar,
    )


def _tags(obj: Mapping[str, object], *, source: str, field: str) -> tuple[str, ...]:
    value = obj.get("tags")
    if isinstance(value, str):  # ST splits a comma string
        return tuple(t.strip() for t in value.split(",") if t.strip())
    return get_str_list(obj, "tags", source=source, field=field)


def _talkativeness(value: object) -> float:
    """ST stores this as a number or a numeric string; anything else means the default."""
    if isinstance(value, bool):
        return DEFAULT_TALKATIVENESS
    if isinstance(value, int | float | str):
        try:
            number = float(value)
        except (ValueError, OverflowError):
            return DEFAULT_TALKATIVENESS
        if math.isfinite(number):
            return number
    return DEFAULT_TALKATIVENESS


def _depth_prompt(extensions: Mapping[str, object], *, source: str) -> DepthPrompt | None:
    value = extensions.get("depth_prompt")
    field = "data.extensions.depth_prompt"
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise FormatError(
            f"expected an object, got {type_name(value)}", source=source, field=field
        )
    prompt = get_str(value, "prompt", source=source, field=f"{field}.prompt")
    if not prompt:
        return None
    depth = as_int(value.get("depth"), source=source, field=f"{field}.depth")
    role = get_str(value, "role", source=source, field=f"{field}.role") or "system"
    return DepthPrompt(text=prompt, depth=_DEFAULT_DEPTH if depth is None else depth, role=role)


def card_to_json(card: CharacterCard) -> dict[str, object]:
    """The card as SillyTavern's export object: V1 mirror at the top level plus ``data``.

    Starts from a deep copy of ``raw`` so every unknown key (top level, ``data``, extensions,
    book) survives. V3 cards stay V3; V1 and V2 cards are written as V2.
    """
    out: dict[str, object] = copy.deepcopy(dict(card.raw))
    if card.spec == "chara_card_v1":
        for legacy in ("char_name", "char_persona", "char_greeting", "example_dialogue"):
            out.pop(legacy, None)
        out.pop("world_scenario", None)
        out.pop("creator_notes", None)
    old_data = out.get("data")
    data: dict[str, object] = (
        copy.deepcopy(dict(old_data)) if isinstance(old_data, Mapping) else {}
    )
    extensions = copy.deepcopy(dict(card.extensions))
    # Keep the stored spelling (ST often writes "0.5" as a string) unless the value changed.
    if _talkativeness(extensions.get("talkativeness")) != card.talkativeness:
        extensions["talkativeness"] = card.talkativeness
    if _depth_prompt(extensions, source="card") != card.depth_prompt:
        note = card.depth_prompt or DepthPrompt(text="", depth=_DEFAULT_DEPTH, role="system")
        extensions["depth_prompt"] = {"prompt": note.text, "depth": note.depth, "role": note.role}
    v1 = {
        "name": card.name,
        "description": card.description,
        "personality": card.personality,
        "scenario": card.scenario,
        "first_mes": card.first_mes,
        "mes_example": card.mes_example,
    }
    out.update(v1)
    out["creatorcomment"] = card.creator_notes
    if _talkativeness(out.get("talkativeness")) != card.talkativeness:
        out["talkativeness"] = card.talkativeness
    out["tags"] = list(card.tags)
    out["spec"] = "chara_card_v3" if card.spec == "chara_card_v3" else "chara_card_v2"
    out["spec_version"] = "3.0" if card.spec == "chara_card_v3" else "2.0"
    data.update(v1)
    data.update(
        creator_notes=card.creator_notes,
        system_prompt=card.system_prompt,
        post_history_instructions=card.post_history_instructions,
        tags=list(card.tags),
        creator=card.creator,
        character_version=card.character_version,
        alternate_greetings=list(card.alternate_greetings),
        group_only_greetings=list(card.group_only_greetings),
        extensions=extensions,
    )
    if card.character_book is not None:
        data["character_book"] = copy.deepcopy(dict(card.character_book))
    else:
        data.pop("character_book", None)
    out["data"] = data
    return out


def card_to_json_bytes(card: CharacterCard) -> bytes:
    """:func:`card_to_json` as UTF-8 JSON with 4-space indentation, like ST's JSON export."""
    return json.dumps(card_to_json(card), ensure_ascii=False, indent=4).encode("utf-8")


def card_to_png(card: CharacterCard, image: bytes | None = None) -> bytes:
    """The card embedded in a PNG: ``chara`` (V2 payload) then ``ccv3`` (V3 label), before IEND.

    The image is ``image``, else the card's ``avatar``, else a 1x1 blank. Existing card chunks
    in the image are replaced. Like ST, the ccv3 payload is the same object relabelled V3.
    A non-PNG ``image`` raises FormatError (convert other formats before calling).
    """
    base = image if image is not None else card.avatar if card.avatar is not None else blank_png()
    payload = card_to_json(card)
    v2 = dict(payload, spec="chara_card_v2", spec_version="2.0")
    v3 = dict(payload, spec="chara_card_v3", spec_version="3.0")
    return replace_text_chunks(
        base,
        [("chara", _b64_json(v2)), ("ccv3", _b64_json(v3))],
        drop_keywords=CARD_CHUNK_KEYWORDS,
        source="card image",
    )


def _b64_json(obj: Mapping[str, object]) -> str:
    raw = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(raw).decode("ascii")


AVATAR_KEY = "tavernbot_avatar_png"
"""Key under which a stored card keeps its picture (base64 PNG) beside the card's own JSON."""


def card_to_asset(card: CharacterCard) -> dict[str, object]:
    """The card as a storable JSON object: its original JSON plus its picture, if any."""
    stored: dict[str, object] = dict(card.raw)
    stored.pop(AVATAR_KEY, None)
    if card.avatar is not None:
        stored[AVATAR_KEY] = base64.b64encode(card.avatar).decode("ascii")
    return stored


def card_from_asset(data: Mapping[str, object], *, source: str) -> CharacterCard:
    """Rebuild a card stored by :func:`card_to_asset` (FormatError on a broken picture)."""
    stored = dict(data)
    picture = stored.pop(AVATAR_KEY, None)
    avatar: bytes | None = None
    if isinstance(picture, str):
        try:
            avatar = base64.b64decode(picture, validate=True)
        except (binascii.Error, ValueError):
            raise FormatError(
                "stored picture is not base64", source=source, field=AVATAR_KEY
            ) from None
    return card_from_mapping(stored, source=source, avatar=avatar)
