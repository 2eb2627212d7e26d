"""The session's bound assets, parsed for a turn: :func:`load_assets` reads the card, preset,
world books, regex sets and the realm's LLM profile asset in one read and parses them, keeping
parsed values between turns in :data:`PARSED` while an asset is unchanged. (Which assets a
session binds is :mod:`engine.turns.assets`.)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from engine.formats.cards import CharacterCard, card_from_mapping
from engine.formats.preset import Preset, parse_preset
from engine.formats.regex_scripts import (
    RegexScript,
    card_regex_scripts,
    parse_regex_script,
    parse_regex_scripts,
)
from engine.formats.worldbook import character_book_to_worldbook, parse_worldbook
from engine.group.settings import GroupSettings, group_of
from engine.ports import UnitOfWork
from engine.prompt.inputs import CharacterFields, GroupPrompt
from engine.prompt.wi_sources import BookSource
from engine.timeline.values import Asset, AssetKind, Session

DEFAULT_CHARACTER: Final = "Narrator"
"""The character's name when the session plays no card."""
PROFILE_ASSET: Final = "profile"
"""Asset kind under which a realm keeps its LLM profiles and bindings (one asset, ``llm``)."""
PROFILE_ASSET_NAME: Final = "llm"
ASSET_CACHE_SIZE: Final = 64
"""Parsed assets (cards, presets, world books, regex sets) kept between turns at most."""
_T = TypeVar("_T")
_MISSING: Final = object()


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionAssets:
    """The session's bound assets, parsed."""

    card: CharacterCard | None
    character: CharacterFields
    preset: Preset
    books: tuple[BookSource, ...] = ()
    scripts: tuple[RegexScript, ...] = ()
    profiles: Mapping[str, Any] = field(default_factory=dict)
    group: GroupPrompt | None = None
    """A group session's members around the speaker (``character``); None when solo."""
    settings: GroupSettings | None = None
    """The group's settings (strategy, muted members...); None when solo."""
    talkativeness: Mapping[str, float] = field(default_factory=dict)
    """Each member's talkativeness from its card (members without a card are left out)."""


class ParsedAssets:
    """Parsed assets kept between turns, keyed by what identifies one stored version (realm,
    kind, name, row id and last update), so a changed asset is parsed again. Validated, not
    trusted: every turn reads the rows themselves (one read for all of them), so an asset
    imported again through another process is parsed again on this process's next turn. At most
    :data:`ASSET_CACHE_SIZE` entries, least recently used dropped first."""

    def __init__(self, size: int = ASSET_CACHE_SIZE) -> None:
        self._size = size
        self._items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, asset: Asset, parse: Callable[[Asset], _T]) -> _T:
        """The parsed value of ``asset``, parsing it on a miss."""
        key = (asset.realm_id, asset.kind, asset.name, asset.id, asset.updated_at)
        found = self._items.get(key, _MISSING)
        if found is not _MISSING:
            self._items.move_to_end(key)
            return found  # type: ignore[no-any-return]
        value = parse(asset)
        self._items[key] = value
        if len(self._items) > self._size:
            self._items.popitem(last=False)
        return value


PARSED = ParsedAssets()
"""The process's cache of parsed assets (values are immutable, so sharing them is safe)."""


def _card(asset: Asset) -> CharacterCard:
    return card_from_mapping(asset.data, source=f"card {asset.name}")


def _preset(asset: Asset) -> Preset:
    return parse_preset(asset.data, source=f"preset {asset.name}")


def _book(asset: Asset) -> BookSource:
    book = parse_worldbook(asset.data, source=f"world book {asset.name}", name=asset.name)
    return BookSource(book=book, kind="chat")


def _scripts(asset: Asset) -> tuple[RegexScript, ...]:
    return tuple(parse_regex_scripts(asset.data.get("scripts", []), source=asset.name))


def speaking(session: Session, speaker: str | None) -> str | None:
    """The name of the card a reply plays: ``speaker`` (a floor's recorded member) when
    given, else the session's character; in a group whose character is not a member, the
    first member."""
    if speaker:
        return speaker
    character = session.settings.character
    group = group_of(session.settings.extra)
    if group is not None and character not in group.members:
        return group.members[0]
    return character


async def load_assets(
    uow: UnitOfWork, session: Session, *, speaker: str | None = None
) -> SessionAssets:
    """Parse the card, preset, world books and regex sets the session is bound to (one read
    for all of them; parsed values come from :data:`PARSED` while an asset is unchanged).
    In a group the card is the one of ``speaker`` (see :func:`speaking`) and every member's
    card is read too, for :attr:`SessionAssets.group`."""
    found = await uow.assets.get_many(session.realm_id, assets_wanted(session, speaker))
    return assets_from(session, {(a.kind, a.name): a for a in found}, speaker=speaker)


def assets_wanted(session: Session, speaker: str | None = None) -> list[tuple[AssetKind, str]]:
    """The ``(kind, name)`` of every asset :func:`assets_from` reads, so a caller can read
    them together with others of the realm in one statement."""
    settings = session.settings
    group = group_of(settings.extra)
    name = speaking(session, speaker)
    wanted: list[tuple[AssetKind, str]] = [(PROFILE_ASSET, PROFILE_ASSET_NAME)]  # type: ignore[list-item]
    if name:
        wanted.append(("card", name))
    if group is not None:
        wanted.extend(("card", member) for member in group.members if member != name)
    if settings.preset:
        wanted.append(("preset", settings.preset))
    wanted.extend(("worldbook", name) for name in settings.worldbooks)
    wanted.extend(("regex", name) for name in settings.regex_sets)
    return wanted


def assets_from(
    session: Session,
    found: Mapping[tuple[AssetKind, str], Asset],
    *,
    speaker: str | None = None,
) -> SessionAssets:
    """:func:`load_assets` over assets already read (``found``: at least those of
    :func:`assets_wanted`, by kind and name)."""
    settings = session.settings
    group = group_of(settings.extra)
    name = speaking(session, speaker)
    card: CharacterCard | None = None
    if name and (asset := found.get(("card", name))) is not None:
        card = PARSED.get(asset, _card)
    character = (
        CharacterFields.from_card(card)
        if card is not None
        else CharacterFields(name=name or DEFAULT_CHARACTER)
    )
    preset = Preset(source="(default preset)")
    if settings.preset and (asset := found.get(("preset", settings.preset))) is not None:
        preset = PARSED.get(asset, _preset)
    books: list[BookSource] = []
    if card is not None and card.character_book is not None:
        book = character_book_to_worldbook(
            card.character_book, source=f"card {card.name}", path="data.character_book"
        )
        books.append(BookSource(book=book, kind="character"))
    for name in settings.worldbooks:
        if (asset := found.get(("worldbook", name))) is not None:
            books.append(PARSED.get(asset, _book))
    # SillyTavern's order: global scripts, then the preset's, then the character's.
    scripts: list[RegexScript] = []
    for name in settings.regex_sets:
        if (asset := found.get(("regex", name))) is not None:
            scripts.extend(PARSED.get(asset, _scripts))
    for index, item in enumerate(preset.regex_scripts):
        scripts.append(
            parse_regex_script(item, source=preset.source, field=f"regex_scripts[{index}]")
        )
    if card is not None:
        scripts.extend(card_regex_scripts(card.extensions, source=f"card {card.name}"))
    profiles = found.get((PROFILE_ASSET, PROFILE_ASSET_NAME))  # type: ignore[arg-type]
    return SessionAssets(
        card=card,
        character=character,
        preset=preset,
        books=tuple(books),
        scripts=tuple(scripts),
        profiles=profiles.data if profiles is not None else {},
        **_group_parts(group, name, character, found),
    )


def _group_parts(
    group: GroupSettings | None,
    name: str | None,
    speaker: CharacterFields,
    found: Mapping[tuple[AssetKind, str], Asset],
) -> dict[str, Any]:
    """The group fields of :class:`SessionAssets` (none for a solo session)."""
    if group is None:
        return {}
    members: list[CharacterFields] = []
    talkativeness: dict[str, float] = {}
    for member in group.members:
        asset = found.get(("card", member))
        card = PARSED.get(asset, _card) if asset is not None else None
        if card is not None:
            talkativeness[member] = card.talkativeness
        if member == name:
            members.append(speaker)
        else:
            members.append(
                CharacterFields.from_card(card) if card else CharacterFields(name=member)
            )
    prompt = GroupPrompt(
        members=tuple(members),
        muted=group.muted,
        mode=group.mode,
        join_muted=group.join_muted,
        join_prefix=group.join_prefix,
        join_suffix=group.join_suffix,
    )
    return {"group": prompt, "settings": group, "talkativeness": talkativeness}


def card_fields(assets: SessionAssets) -> dict[str, str]:
    """The card's text fields for ``character_info``."""
    c = assets.character
    return {
        "name": c.name,
        "description": c.description,
        "personality": c.personality,
        "scenario": c.scenario,
        "mes_example": c.mes_example,
        "system_prompt": c.system_prompt,
        "post_history_instructions": c.post_history_instructions,
        "creator_notes": c.creator_notes,
    }
