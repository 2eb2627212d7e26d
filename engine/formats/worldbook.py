"""SillyTavern world books (lorebooks): the standalone file and the card-embedded book.

Three shapes are read into one :class:`WorldBook`:

- the world file ``{"entries": {"<uid>": entry, ...}}`` (entries keyed by uid, camelCase fields),
- a card's ``character_book`` ``{"entries": [entry, ...]}`` (V2/V3 names, extras in
  ``extensions``), converted the way SillyTavern converts it on import,
- a V3 stand-alone ``{"spec": "lorebook_v3", "data": character_book}``.

Every entry keeps its original object in ``raw`` so :func:`worldbook_to_json` round-trips
unknown keys; :func:`worldbook_to_character_book` writes the card form.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from engine.errors import FormatError
from engine.formats.fieldread import FieldReader, merge_known

BookFormat = Literal["world", "character_book"]

# Positions (world_info_position).
POS_BEFORE = 0
POS_AFTER = 1
POS_AN_TOP = 2
POS_AN_BOTTOM = 3
POS_AT_DEPTH = 4
POS_EM_TOP = 5
POS_EM_BOTTOM = 6
POS_OUTLET = 7
POSITIONS = range(POS_BEFORE, POS_OUTLET + 1)

# Secondary-key logic (selectiveLogic).
LOGIC_AND_ANY = 0
LOGIC_NOT_ALL = 1
LOGIC_NOT_ANY = 2
LOGIC_AND_ALL = 3

ROLE_SYSTEM = 0
ROLE_USER = 1
ROLE_ASSISTANT = 2
DEFAULT_DEPTH = 4
DEFAULT_ORDER = 100
DEFAULT_GROUP_WEIGHT = 100
GENERATION_TYPES = ("normal", "continue", "impersonate", "swipe", "regenerate", "quiet")
# A book with more entries than this is refused: real books hold hundreds, not millions.
MAX_ENTRIES = 20_000


@dataclass(frozen=True, slots=True, kw_only=True)
class CharacterFilter:
    """Restricts an entry to (or excludes it from) characters by name or tag."""

    is_exclude: bool = False
    names: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldEntry:
    """One world info entry, with SillyTavern's fields under Python names (same defaults).

    ``None`` in the optional fields means "use the book-wide setting". ``delay_until_recursion``
    is a level: 0 off, ``true`` reads as 1.
    """

    uid: int
    keys: tuple[str, ...] = ()
    secondary_keys: tuple[str, ...] = ()
    comment: str = ""
    content: str = ""
    constant: bool = False
    vectorized: bool = False
    selective: bool = True
    selective_logic: int = LOGIC_AND_ANY
    add_memo: bool = False
    order: float = DEFAULT_ORDER
    position: int = POS_BEFORE
    disable: bool = False
    ignore_budget: bool = False
    exclude_recursion: bool = False
    prevent_recursion: bool = False
    delay_until_recursion: int = 0
    probability: float = 100.0
    use_probability: bool = True
    depth: int = DEFAULT_DEPTH
    role: int | None = None
    outlet_name: str = ""
    group: str = ""
    group_override: bool = False
    group_weight: float = DEFAULT_GROUP_WEIGHT
    use_group_scoring: bool | None = None
    scan_depth: int | None = None
    case_sensitive: bool | None = None
    match_whole_words: bool | None = None
    automation_id: str = ""
    sticky: int | None = None
    cooldown: int | None = None
    delay: int | None = None
    match_persona_description: bool = False
    match_character_description: bool = False
    match_character_personality: bool = False
    match_character_depth_prompt: bool = False
    match_scenario: bool = False
    match_creator_notes: bool = False
    triggers: tuple[str, ...] = ()
    character_filter: CharacterFilter = field(default_factory=CharacterFilter)
    display_index: int | None = None
    extensions: Mapping[str, Any] = field(default_factory=dict, compare=False)
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    imported: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def groups(self) -> tuple[str, ...]:
        """The inclusion groups (``group`` split on commas)."""
        return tuple(g.strip() for g in self.group.split(",") if g.strip())


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldBook:
    """A named set of entries, plus the book-level fields a card book may carry."""

    name: str
    entries: tuple[WorldEntry, ...] = ()
    scan_depth: int | None = None
    token_budget: int | None = None
    recursive_scanning: bool | None = None
    description: str = ""
    extensions: Mapping[str, Any] = field(default_factory=dict, compare=False)
    format: BookFormat = "world"
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)


# World-file key -> (WorldEntry field, card-book extensions key or None).
_WORLD_FIELDS: tuple[tuple[str, str, str | None], ...] = (
    ("key", "keys", None),
    ("keysecondary", "secondary_keys", None),
    ("comment", "comment", None),
    ("content", "content", None),
    ("constant", "constant", None),
    ("vectorized", "vectorized", "vectorized"),
    ("selective", "selective", None),
    ("selectiveLogic", "selective_logic", "selectiveLogic"),
    ("addMemo", "add_memo", None),
    ("order", "order", None),
    ("position", "position", "position"),
    ("disable", "disable", None),
    ("ignoreBudget", "ignore_budget", "ignore_budget"),
    ("excludeRecursion", "exclude_recursion", "exclude_recursion"),
    ("preventRecursion", "prevent_recursion", "prevent_recursion"),
    ("delayUntilRecursion", "delay_until_recursion", "delay_until_recursion"),
    ("probability", "probability", "probability"),
    ("useProbability", "use_probability", "useProbability"),
    ("depth", "depth", "depth"),
    ("role", "role", "role"),
    ("outletName", "outlet_name", "outlet_name"),
    ("group", "group", "group"),
    ("groupOverride", "group_override", "group_override"),
    ("groupWeight", "group_weight", "group_weight"),
    ("useGroupScoring", "use_group_scoring", "use_group_scoring"),
    ("scanDepth", "scan_depth", "scan_depth"),
    ("caseSensitive", "case_sensitive", "case_sensitive"),
    ("matchWholeWords", "match_whole_words", "match_whole_words"),
    ("automationId", "automation_id", "automation_id"),
    ("sticky", "sticky", "sticky"),
    ("cooldown", "cooldown", "cooldown"),
    ("delay", "delay", "delay"),
    ("matchPersonaDescription", "match_persona_description", "match_persona_description"),
    ("matchCharacterDescription", "match_character_description", "match_character_description"),
    ("matchCharacterPersonality", "match_character_personality", "match_character_personality"),
    (
        "matchCharacterDepthPrompt",
        "match_character_depth_prompt",
        "match_character_depth_prompt",
    ),
    ("matchScenario", "match_scenario", "match_scenario"),
    ("matchCreatorNotes", "match_creator_notes", "match_creator_notes"),
    ("triggers", "triggers", "triggers"),
    ("displayIndex", "display_index", "display_index"),
)
_ENTRY_DEFAULTS = WorldEntry(uid=0)
_FIELD_TYPES = {f.name: f.type for f in fields(WorldEntry)}


def _read_value(r: FieldReader, key: str, attr: str) -> Any:
    kind = _FIELD_TYPES[attr]
    default = getattr(_ENTRY_DEFAULTS, attr)
    if kind == "tuple[str, ...]":
        return r.strings(key)
    if kind == "bool":
        return r.boolean(key, default)
    if kind == "bool | None":
        return r.optional_bool(key)
    if kind == "int":
        if attr == "delay_until_recursion":
            value = r.data.get(key)
            if isinstance(value, bool) or value is None:
                return 1 if value else 0
        return r.integer(key, default)
    if kind == "int | None":
        return r.optional_int(key)
    if kind == "float":
        return r.number(key, default)
    return r.string(key, default)


def _check_entry(entry: WorldEntry, r: FieldReader, key_of: Mapping[str, str]) -> None:
    if entry.position not in POSITIONS:
        raise r.fail(key_of["position"], f"unknown position {entry.position} (expected 0..7)")
    if entry.selective_logic not in (LOGIC_AND_ANY, LOGIC_NOT_ALL, LOGIC_NOT_ANY, LOGIC_AND_ALL):
        raise r.fail(key_of["selective_logic"], "expected 0, 1, 2 or 3")
    if entry.role is not None and entry.role not in (ROLE_SYSTEM, ROLE_USER, ROLE_ASSISTANT):
        raise r.fail(key_of["role"], "expected 0 (system), 1 (user) or 2 (assistant)")
    if entry.depth < 0:
        raise r.fail(key_of["depth"], "must not be negative")


def _character_filter(r: FieldReader) -> CharacterFilter:
    if not r.has("characterFilter"):
        return CharacterFilter()
    c = r.child("characterFilter")
    return CharacterFilter(
        is_exclude=c.boolean("isExclude"), names=c.strings("names"), tags=c.strings("tags")
    )


def _entry_from_world(item: object, *, source: str, path: str, fallback_uid: int) -> WorldEntry:
    r = FieldReader(item, source=source, path=path)
    values = {attr: _read_value(r, key, attr) for key, attr, _ in _WORLD_FIELDS}
    uid = r.optional_int("uid")
    entry = WorldEntry(
        uid=fallback_uid if uid is None else uid,
        character_filter=_character_filter(r),
        extensions=r.mapping("extensions"),
        raw=copy.deepcopy(dict(r.data)),
        **values,
    )
    _check_entry(entry, r, {attr: key for key, attr, _ in _WORLD_FIELDS})
    object.__setattr__(entry, "imported", _world_values(entry))
    return entry


def _entry_from_card(item: object, *, source: str, path: str, index: int) -> WorldEntry:
    r = FieldReader(item, source=source, path=path)
    ext = r.child("extensions")
    values: dict[str, Any] = {}
    for _key, attr, ext_key in _WORLD_FIELDS:
        if ext_key is not None and ext.has(ext_key):
            values[attr] = _read_value(ext, ext_key, attr)
    uid = r.optional_int("id") if not isinstance(r.data.get("id"), str) else None
    comment = r.string("comment") or r.string("name")
    if "position" not in values:
        values["position"] = POS_BEFORE if r.string("position") == "before_char" else POS_AFTER
    if "case_sensitive" not in values:
        values["case_sensitive"] = r.optional_bool("case_sensitive")
    entry = WorldEntry(
        uid=index if uid is None else uid,
        keys=r.strings("keys"),
        secondary_keys=r.strings("secondary_keys"),
        comment=comment,
        content=r.string("content"),
        constant=r.boolean("constant"),
        selective=r.boolean("selective"),
        order=r.number("insertion_order", DEFAULT_ORDER),
        disable=not r.boolean("enabled", True),
        add_memo=bool(comment),
        extensions=ext.data,
        raw=copy.deepcopy(dict(r.data)),
        **values,
    )
    key_of = {attr: f"extensions.{ext_key}" for _k, attr, ext_key in _WORLD_FIELDS if ext_key}
    _check_entry(entry, r, key_of)
    return entry


WORLDBOOK_OBJECT = "a world book object"
"""What a world book file must hold, as import errors name it ("expected a world book
object, got a string")."""


def parse_worldbook(data: object, *, source: str, name: str = "") -> WorldBook:
    """Read a world book in any of the three shapes (decoded JSON). ``name`` defaults to the
    book's own name, then ``source``. Malformed data raises :class:`FormatError`."""
    top = FieldReader(data, source=source, path="")
    if top.data.get("spec") == "lorebook_v3" or (
        "entries" not in top.data and isinstance(top.data.get("data"), Mapping)
    ):
        book = character_book_to_worldbook(top.mapping("data"), source=source, path="data")
        return _renamed(book, name)
    if "entries" not in top.data:
        raise top.fail("entries", "missing: not a world book")
    entries_value = top.data["entries"]
    if isinstance(entries_value, list):
        return _renamed(character_book_to_worldbook(top.data, source=source, path=""), name)
    if not isinstance(entries_value, Mapping):
        raise top.fail("entries", "expected an object keyed by uid (or a list)")
    if len(entries_value) > MAX_ENTRIES:
        raise top.fail("entries", f"{len(entries_value)} entries, over MAX_ENTRIES={MAX_ENTRIES}")
    entries: list[WorldEntry] = []
    for index, (key, item) in enumerate(entries_value.items()):
        text = str(key)
        fallback = int(text) if text.isascii() and text.isdigit() else index
        entries.append(
            _entry_from_world(item, source=source, path=f"entries.{key}", fallback_uid=fallback)
        )
    original = top.mapping("originalData")
    return WorldBook(
        name=name or top.string("name") or str(original.get("name") or "") or source,
        entries=tuple(entries),
        format="world",
        raw=copy.deepcopy(dict(top.data)),
    )


def character_book_to_worldbook(
    book: Mapping[str, Any] | object, *, source: str, path: str = "character_book", name: str = ""
) -> WorldBook:
    """Convert a card's ``character_book`` (raw mapping) into a world book."""
    r = FieldReader(book, source=source, path=path)
    items = r.items("entries")
    if len(items) > MAX_ENTRIES:
        raise r.fail("entries", f"{len(items)} entries, over MAX_ENTRIES={MAX_ENTRIES}")
    entries = tuple(
        _entry_from_card(item, source=source, path=r.where(f"entries[{i}]"), index=i)
        for i, item in enumerate(items)
    )
    return WorldBook(
        name=name or r.string("name") or source,
        entries=entries,
        scan_depth=r.optional_int("scan_depth"),
        token_budget=r.optional_int("token_budget"),
        recursive_scanning=r.optional_bool("recursive_scanning"),
        description=r.string("description"),
        extensions=r.mapping("extensions"),
        format="character_book",
        raw=copy.deepcopy(dict(r.data)),
    )


def _renamed(book: WorldBook, name: str) -> WorldBook:
    if not name:
        return book
    return WorldBook(
        name=name,
        entries=book.entries,
        scan_depth=book.scan_depth,
        token_budget=book.token_budget,
        recursive_scanning=book.recursive_scanning,
        description=book.description,
        extensions=book.extensions,
        format=book.format,
        raw=book.raw,
    )


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _world_values(entry: WorldEntry) -> dict[str, Any]:
    values = {key: _plain(getattr(entry, attr)) for key, attr, _ in _WORLD_FIELDS}
    values["uid"] = entry.uid
    values["delayUntilRecursion"] = entry.delay_until_recursion or False
    f = entry.character_filter
    if f != CharacterFilter():
        values["characterFilter"] = {
            "isExclude": f.is_exclude,
            "names": list(f.names),
            "tags": list(f.tags),
        }
    return values


_WORLD_DEFAULTS = _world_values(_ENTRY_DEFAULTS)


def entry_to_json(entry: WorldEntry) -> dict[str, Any]:
    """One entry in the world-file form (unknown keys of the original kept)."""
    return merge_known(entry.raw, _world_values(entry), _WORLD_DEFAULTS, entry.imported)


def worldbook_to_json(book: WorldBook) -> dict[str, Any]:
    """The book as a SillyTavern world file ``{"entries": {"<uid>": entry}}``.

    A book imported from a world file comes back with its unknown keys; a card book is written
    in the world-file form with the original kept under ``originalData``, as SillyTavern does.
    """
    if book.format == "world":
        out = dict(book.raw)
    else:
        out = {"originalData": copy.deepcopy(dict(book.raw))}
    out["entries"] = {str(e.uid): entry_to_json(e) for e in book.entries}
    return out


def worldbook_to_character_book(book: WorldBook) -> dict[str, Any]:
    """The book in the card ``character_book`` form (V2 names, extras under ``extensions``)."""
    entries: list[dict[str, Any]] = []
    for e in book.entries:
        ext: dict[str, Any] = dict(e.extensions)
        for _key, attr, ext_key in _WORLD_FIELDS:
            if ext_key is not None:
                ext[ext_key] = _plain(getattr(e, attr))
        ext["delay_until_recursion"] = e.delay_until_recursion or False
        entries.append(
            {
                "id": e.uid,
                "keys": list(e.keys),
                "secondary_keys": list(e.secondary_keys),
                "comment": e.comment,
                "content": e.content,
                "constant": e.constant,
                "selective": e.selective,
                "insertion_order": e.order,
                "enabled": not e.disable,
                "position": "before_char" if e.position == POS_BEFORE else "after_char",
                "use_regex": True,
                "extensions": ext,
            }
        )
    out: dict[str, Any] = {"name": book.name, "entries": entries}
    if book.format == "character_book":
        out = {**book.raw, **out}
    return out


__all__ = [
    "MAX_ENTRIES",
    "CharacterFilter",
    "FormatError",
    "WorldBook",
    "WorldEntry",
    "character_book_to_worldbook",
    "entry_to_json",
    "parse_worldbook",
    "worldbook_to_character_book",
    "worldbook_to_json",
]
