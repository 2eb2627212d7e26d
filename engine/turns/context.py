"""What a turn reads before it calls the model, in one short unit of work.

:func:`load_assets` turns the session's bindings into parsed values (card, preset, world books,
regex scripts); :func:`read_turn` adds the branch's recent chat (a bounded window of floors,
newest last, hidden floors, pages and messages left out), the variable state the new page
starts from and the world-info timed state of the branch (kept in the active page's meta of
the floor before).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from engine.formats.cards import CharacterCard, card_from_mapping
from engine.formats.preset import Preset, parse_preset
from engine.formats.regex_scripts import (
    RegexScript,
    card_regex_scripts,
    parse_regex_script,
    parse_regex_scripts,
)
from engine.formats.worldbook import character_book_to_worldbook, parse_worldbook
from engine.ports import UnitOfWork
from engine.prompt.inputs import (
    PLACEMENT_USER_INPUT,
    CharacterFields,
    HistoryLine,
    ListHistory,
)
from engine.prompt.regex_run import apply_scripts
from engine.prompt.wi_sources import BookSource
from engine.prompt.wi_timed import TimedState
from engine.timeline.lineage import Lineage, build_lineage
from engine.timeline.values import Branch, Floor, Message, NewMessage, Page, Session
from engine.variables import store
from engine.variables.values import VariableState

HISTORY_WINDOW: Final = 200
"""Floors of chat a turn reads at most (assembly stops at the token budget well before)."""
DEFAULT_CHARACTER: Final = "Narrator"
TIMED_STATE_META: Final = "timed_state"
PROFILE_ASSET: Final = "profile"
"""Asset kind under which a realm keeps its LLM profiles and bindings (one asset, ``llm``)."""
PROFILE_ASSET_NAME: Final = "llm"


class WindowHistory(ListHistory):
    """The newest floors of a chat (oldest first) standing for a chat of ``total`` messages."""

    def __init__(self, lines: Sequence[HistoryLine], total: int) -> None:
        super().__init__(lines)
        self._total = max(total, len(lines))

    @property
    def length(self) -> int:
        """The length of the whole chat, not only of the window."""
        return self._total


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionAssets:
    """The session's bound assets, parsed."""

    card: CharacterCard | None
    character: CharacterFields
    preset: Preset
    books: tuple[BookSource, ...] = ()
    scripts: tuple[RegexScript, ...] = ()
    profiles: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRead:
    """Everything a generation needs from storage."""

    session: Session
    branch: Branch
    assets: SessionAssets
    history: tuple[HistoryLine, ...]
    total_messages: int
    user_input: str | None
    user_name: str
    state: VariableState
    timed_state: TimedState
    branches: tuple[Branch, ...] = ()


async def load_assets(uow: UnitOfWork, session: Session) -> SessionAssets:
    """Parse the card, preset, world books and regex sets the session is bound to."""
    settings = session.settings
    realm = session.realm_id
    card: CharacterCard | None = None
    if settings.character:
        asset = await uow.assets.get(realm, "card", settings.character)
        if asset is not None:
            card = card_from_mapping(asset.data, source=f"card {asset.name}")
    character = (
        CharacterFields.from_card(card)
        if card is not None
        else CharacterFields(name=settings.character or DEFAULT_CHARACTER)
    )
    preset = Preset(source="(default preset)")
    if settings.preset:
        asset = await uow.assets.get(realm, "preset", settings.preset)
        if asset is not None:
            preset = parse_preset(asset.data, source=f"preset {asset.name}")
    books: list[BookSource] = []
    if card is not None and card.character_book is not None:
        book = character_book_to_worldbook(
            card.character_book, source=f"card {card.name}", path="data.character_book"
        )
        books.append(BookSource(book=book, kind="character"))
    for name in settings.worldbooks:
        asset = await uow.assets.get(realm, "worldbook", name)
        if asset is not None:
            book = parse_worldbook(asset.data, source=f"world book {name}", name=name)
            books.append(BookSource(book=book, kind="chat"))
    # SillyTavern's order: global scripts, then the preset's, then the character's.
    scripts: list[RegexScript] = []
    for name in settings.regex_sets:
        asset = await uow.assets.get(realm, "regex", name)
        if asset is not None:
            scripts.extend(parse_regex_scripts(asset.data.get("scripts", []), source=name))
    for index, item in enumerate(preset.regex_scripts):
        scripts.append(
            parse_regex_script(item, source=preset.source, field=f"regex_scripts[{index}]")
        )
    if card is not None:
        scripts.extend(card_regex_scripts(card.extensions, source=f"card {card.name}"))
    profiles = await uow.assets.get(realm, PROFILE_ASSET, PROFILE_ASSET_NAME)  # type: ignore[arg-type]
    return SessionAssets(
        card=card,
        character=character,
        preset=preset,
        books=tuple(books),
        scripts=tuple(scripts),
        profiles=profiles.data if profiles is not None else {},
    )


async def read_history(
    uow: UnitOfWork,
    lineage: Lineage,
    last: int,
    *,
    user_name: str,
    char_name: str,
    window: int = HISTORY_WINDOW,
) -> tuple[list[HistoryLine], list[tuple[Floor, Page]]]:
    """The visible messages of floors ``last-window+1 .. last`` (oldest first), and the
    ``(floor, active page)`` pairs read."""
    if last < 1:
        return [], []
    pairs = await store.lineage_pages(uow, lineage, max(1, last - window + 1), last)
    messages = await uow.messages.of_floors([f.id for f, _ in pairs])
    return history_lines(pairs, messages, user_name=user_name, char_name=char_name), pairs


def history_lines(
    pairs: Sequence[tuple[Floor, Page]],
    messages: Sequence[Message],
    *,
    user_name: str,
    char_name: str,
) -> list[HistoryLine]:
    """The visible messages of these floors as the branch sees them (active pages only)."""
    by_floor: dict[int, list[Message]] = {}
    for message in messages:
        by_floor.setdefault(message.floor_id, []).append(message)
    lines: list[HistoryLine] = []
    for floor, page in pairs:
        if floor.hidden:
            continue
        for message in by_floor.get(floor.id, ()):
            if message.hidden or (message.page_id is not None and message.page_id != page.id):
                continue
            if message.page_id is not None and page.hidden:
                continue
            lines.append(line_of(message, floor.seq, user_name=user_name, char_name=char_name))
    return lines


def line_of(message: Message, seq: int, *, user_name: str, char_name: str) -> HistoryLine:
    """A stored message as assembly reads it."""
    is_user = message.role == "user"
    default = user_name if is_user else char_name
    return HistoryLine(
        text=message.raw,
        is_user=is_user,
        name=message.speaker_name or default,
        floor=seq,
        role="system" if message.role in ("system", "narrator") else None,
    )


def timed_state_of(page: Page | None) -> TimedState:
    """The world-info timed state a page left behind (empty when none)."""
    if page is None:
        return TimedState()
    data = page.meta.get(TIMED_STATE_META)
    return TimedState.from_json(data) if data else TimedState()


async def read_turn(
    uow: UnitOfWork,
    *,
    session: Session,
    floor: Floor,
    mode: str,
    user_name: str | None = None,
    extra_input: str | None = None,
    window: int = HISTORY_WINDOW,
    assets: SessionAssets | None = None,
) -> TurnRead:
    """Read a turn for a page of ``floor``. ``mode``: ``respond`` (a new floor), ``regenerate``
    (another page of a committed floor), ``continue`` (extend its active page) or ``dry_run``
    (``floor`` is the head's successor that was never stored; ``extra_input`` is the text).
    ``user_name`` None: the name of the floor's last speaker."""
    branches = await uow.branches.list(session.id)
    branch = next(b for b in branches if b.id == floor.branch_id)
    lineage = build_lineage(branch, branches)
    if assets is None:
        assets = await load_assets(uow, session)
    char_name = assets.character.name
    last = floor.seq if mode == "continue" else floor.seq - 1
    pairs = (
        await store.lineage_pages(uow, lineage, max(1, last - window + 1), last)
        if last >= 1
        else []
    )
    own = mode in ("respond", "regenerate")
    messages = await uow.messages.of_floors([f.id for f, _ in pairs] + ([floor.id] if own else []))
    inputs = [m for m in messages if m.floor_id == floor.id and m.page_id is None and not m.hidden]
    if user_name is None:
        # The floor's last speaker; for a dry run, the branch's last speaker.
        named = [m.speaker_name for m in inputs if m.role == "user" and m.speaker_name]
        named = named or [m.speaker_name for m in messages if m.role == "user" and m.speaker_name]
        user_name = named[-1] if named else "User"
    lines = history_lines(pairs, messages, user_name=user_name, char_name=char_name)
    before = {f.seq: p for f, p in pairs}.get(floor.seq - 1)
    user_input: str | None = extra_input
    if inputs:
        input_lines = [
            line_of(m, floor.seq, user_name=user_name, char_name=char_name) for m in inputs
        ]
        if input_lines[-1].is_user:
            user_input = input_lines.pop().text
        lines.extend(input_lines)
    page_values: dict[str, Any] = {}
    if mode == "regenerate":
        branch_values = await store.branch_state(uow, lineage, floor.seq, last=None)
        floor_values = await store.floor_scope(uow, floor, None)
    elif mode == "dry_run":
        branch_values = await uow.variables.values("branch", branch.id)
        floor_values = {}
    else:
        branch_values = await uow.variables.values("branch", branch.id)
        floor_values = await uow.variables.values("floor", floor.id)
        if mode == "continue" and pairs:  # the new page starts from what the active one left
            page_values = await uow.variables.values("page", pairs[-1][1].id)
    state = VariableState(
        page=page_values,
        floor=floor_values,
        branch=branch_values,
        chat=await uow.variables.values("chat", session.id),
        global_=await uow.variables.values("global", session.realm_id),
    )
    return TurnRead(
        session=session,
        branch=branch,
        assets=assets,
        history=tuple(lines),
        # Floors older than the window still count (as an input and a reply each), so the
        # chat length keeps growing past the window: timed world info measures in it.
        total_messages=len(lines) + 2 * max(0, last - window),
        user_input=user_input,
        user_name=user_name,
        state=state,
        timed_state=timed_state_of(pairs[-1][1] if mode == "continue" and pairs else before),
        branches=tuple(branches),
    )


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


def stored_input(message: NewMessage, scripts: Sequence[RegexScript]) -> NewMessage:
    """A user's message as SillyTavern stores it: the user-input regex scripts of the store
    channel applied, and the display channel's for what platforms show."""
    if not scripts:
        return message
    raw = apply_scripts(message.raw, scripts, placement=PLACEMENT_USER_INPUT, channel="store").text
    shown = apply_scripts(raw, scripts, placement=PLACEMENT_USER_INPUT, channel="display").text
    return replace(message, raw=raw, display=shown)
