"""What a turn reads before it calls the model, in one short unit of work.

:func:`read_turn` takes the session's parsed assets (:mod:`engine.turns.parsed_assets`) and
adds the branch's recent chat (a bounded window of floors, newest last, hidden floors, pages
and messages left out), the variable state the new page starts from and the world-info timed
state of the branch (kept in the active page's meta of the floor before).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from engine.formats.regex_scripts import (
    RegexScript,
)
from engine.ports import UnitOfWork, WindowMessage, WindowPage
from engine.prompt.inputs import (
    PLACEMENT_USER_INPUT,
    HistoryLine,
    ListHistory,
)
from engine.prompt.regex_budget import RegexBudget
from engine.prompt.regex_run import apply_scripts
from engine.prompt.wi_timed import TimedState
from engine.timeline.lineage import Lineage, build_lineage
from engine.timeline.values import (
    Branch,
    Floor,
    Message,
    NewMessage,
    Page,
    Session,
)
from engine.turns.parsed_assets import SessionAssets, load_assets
from engine.turns.personas import persona_of
from engine.variables import store
from engine.variables.values import Scope, VariableState

HISTORY_WINDOW: Final = 200
"""Floors of chat a turn reads at most (assembly stops at the token budget well before)."""
TIMED_STATE_META: Final = "timed_state"


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
    user_id: str | None = None
    """The platform user id of the speaker answered (the floor's last speaker; for a dry run,
    the branch's): their persona is found by it, never by a name anyone can take."""
    persona: str = ""
    """The description of ``user_id``'s persona in the realm ("" when none), read with the
    turn (never cached: another process may have changed it)."""


async def window_pages(
    uow: UnitOfWork, lineage: Lineage, first: int, last: int
) -> list[WindowPage]:
    """The committed floors ``first..last`` the branch sees, each with the page it sees
    active (a fork sees the page it pinned), and its failed floors (``failed`` rows), by
    floor number: one read for every segment, with the meta of floor ``last``'s page only."""
    spans: list[tuple[int, int, int]] = []
    for segment in lineage.segments:
        low = max(first, segment.first)
        high = last if segment.last is None else min(last, segment.last)
        if low <= high:
            spans.append((segment.branch_id, low, high))
    # Only a fork's own floors can hold a pinned page; skip the lookup for the others.
    pins = {(s.branch_id, s.last) for s in lineage.segments if s.last is not None}
    seen: list[WindowPage] = []
    for row in await uow.floors.window(spans, meta_seq=last):
        if row.failed:  # its input stays in the chat (issue 12); it has no reply
            seen.append(row)
            continue
        number = row.active_page
        if (row.branch_id, row.seq) in pins:
            number = lineage.pinned(row.branch_id, row.seq) or number
        if row.number == number:
            seen.append(row)
    return seen


def history_lines(
    pages: Sequence[WindowPage],
    messages: Sequence[WindowMessage],
    *,
    user_name: str,
    char_name: str,
) -> list[HistoryLine]:
    """The visible messages of these floors as the branch sees them (active pages only)."""
    by_floor: dict[int, list[WindowMessage]] = {}
    for message in messages:
        by_floor.setdefault(message.floor_id, []).append(message)
    lines: list[HistoryLine] = []
    for row in pages:
        if row.floor_hidden:
            continue
        for message in by_floor.get(row.floor_id, ()):
            if message.hidden or (message.page_id is not None and message.page_id != row.page_id):
                continue
            if message.page_id is not None and row.page_hidden:
                continue
            lines.append(line_of(message, row.seq, user_name=user_name, char_name=char_name))
    return lines


def line_of(
    message: Message | WindowMessage, seq: int, *, user_name: str, char_name: str
) -> HistoryLine:
    """A stored message as assembly reads it."""
    is_user = message.role == "user"
    default = user_name if is_user else char_name
    name = message.speaker_name or default
    return HistoryLine(
        text=message.raw,
        is_user=is_user,
        name=name,
        floor=seq,
        role="system" if message.role in ("system", "narrator") else None,
        # Another player's line: SillyTavern marks a message sent as a different persona so
        # the prompt names its speaker, which is what tells players apart in group play.
        force_avatar=is_user and name != user_name,
    )


def timed_state_from(meta: Mapping[str, Any] | None) -> TimedState:
    """The world-info timed state kept in a page's meta (empty when none)."""
    data = meta.get(TIMED_STATE_META) if meta else None
    return TimedState.from_json(data) if data else TimedState()


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
    branches: Sequence[Branch] | None = None,
    personas: Mapping[str, str] | None = None,
) -> TurnRead:
    """Read a turn for a page of ``floor``. ``mode``: ``respond`` (a new floor), ``regenerate``
    (another page of a committed floor), ``continue`` (extend its active page) or ``dry_run``
    (``floor`` is the head's successor that was never stored; ``extra_input`` is the text).
    ``user_name`` None: the name of the floor's last speaker. ``assets`` and ``branches``:
    already read in this unit of work (None: read them here); ``personas``: persona
    descriptions by user id, already read in this unit of work (a user not in it is read)."""
    if branches is None:
        branches = await uow.branches.list(session.id)
    branch = next(b for b in branches if b.id == floor.branch_id)
    lineage = build_lineage(branch, branches)
    if assets is None:  # a group floor plays its own speaker's card
        assets = await load_assets(uow, session, speaker=floor.speaker)
    char_name = assets.character.name
    last = floor.seq if mode == "continue" else floor.seq - 1
    pairs = await window_pages(uow, lineage, max(1, last - window + 1), last) if last >= 1 else []
    own = mode in ("respond", "regenerate")
    messages = await uow.messages.window([p.floor_id for p in pairs] + ([floor.id] if own else []))
    inputs = [m for m in messages if m.floor_id == floor.id and m.page_id is None and not m.hidden]
    # The floor's last speaker; for a dry run, the branch's last speaker.
    spoken = [m for m in inputs if m.role == "user" and m.speaker_name]
    spoken = spoken or [m for m in messages if m.role == "user" and m.speaker_name]
    user_id = spoken[-1].speaker_id if spoken else None
    if user_name is None:
        user_name = (spoken[-1].speaker_name if spoken else None) or "User"
    lines = history_lines(pairs, messages, user_name=user_name, char_name=char_name)
    # The timed state comes from the page seen on floor ``last`` (the floor before, or the
    # floor a continue extends): the only page whose meta the window read.
    timed = timed_state_from(pairs[-1].meta) if pairs and pairs[-1].seq == last else TimedState()
    answered = [p for p in pairs if not p.failed]
    if pairs and pairs[-1].failed and answered:
        # The floor before failed: the timed state is what the last answered floor left.
        timed = timed_state_of(await uow.pages.get(answered[-1].page_id))
    user_input: str | None = extra_input
    if inputs:
        input_lines = [
            line_of(m, floor.seq, user_name=user_name, char_name=char_name) for m in inputs
        ]
        if input_lines[-1].is_user:
            user_input = input_lines.pop().text
        lines.extend(input_lines)
    # Every materialised scope this turn starts from, in one read.
    owners: list[tuple[Scope, int]] = [
        ("branch", branch.id),
        ("chat", session.id),
        ("global", session.realm_id),
    ]
    if mode in ("respond", "continue"):
        owners.append(("floor", floor.id))
    page_owner: tuple[Scope, int] | None = None
    if mode == "continue" and pairs:  # the new page starts from what the active one left
        page_owner = ("page", pairs[-1].page_id)
        owners.append(("page", pairs[-1].page_id))
    found = await uow.variables.values_of(owners)
    branch_values = found[("branch", branch.id)]
    floor_values = found.get(("floor", floor.id), {})
    page_values = found[page_owner] if page_owner is not None else {}
    if mode == "regenerate":
        branch_values = await store.branch_state(uow, lineage, floor.seq, last=None)
        floor_values = await store.floor_scope(uow, floor, None)
    state = VariableState(
        page=page_values,
        floor=floor_values,
        branch=branch_values,
        chat=found[("chat", session.id)],
        global_=found[("global", session.realm_id)],
    )
    if personas is not None and user_id is not None and user_id in personas:
        persona = personas[user_id]
    else:
        persona = await persona_of(uow, session.realm_id, user_id)
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
        timed_state=timed,
        branches=tuple(branches),
        user_id=user_id,
        persona=persona,
    )


def stored_input(
    message: NewMessage, scripts: Sequence[RegexScript], budget: RegexBudget | None = None
) -> NewMessage:
    """A user's message as SillyTavern stores it: the user-input regex scripts of the store
    channel applied, and the display channel's for what platforms show. The runs draw on the
    turn's regex ``budget`` when one is given."""
    if not scripts:
        return message
    place = PLACEMENT_USER_INPUT
    raw = apply_scripts(message.raw, scripts, placement=place, channel="store", budget=budget)
    shown = apply_scripts(raw.text, scripts, placement=place, channel="display", budget=budget)
    return replace(message, raw=raw.text, display=shown.text)


async def stored_inputs(
    messages: Sequence[NewMessage], scripts: Sequence[RegexScript], budget: RegexBudget
) -> list[NewMessage]:
    """:func:`stored_input` for each message, in a worker thread when there are scripts to
    run (their cost is the turn's regex budget, which must not hold the event loop)."""
    if not scripts:
        return list(messages)
    return await asyncio.to_thread(lambda: [stored_input(m, scripts, budget) for m in messages])
