"""Group turns: several members answering one user message, each on its own floor.

A group's turn (:meth:`GroupTurns.respond`) draws an activation seed from the service's
randomness, asks :func:`engine.group.activation.activate` who speaks and records the seed on
the turn's first floor, so re-running the activation with it names the same members. The first
speaker's reply is on the floor holding the user's lines; each further speaker gets a new floor
with no input, its speaker recorded, opened only after the reply before it committed, so its
prompt's history holds that reply (named by its speaker). The caller holds the branch's lock
for the whole turn, so the turn's floors are consecutive.

When nobody answers (manual strategy), the user's lines are still a floor of the story: its page
1 commits with no reply and :data:`UNANSWERED_META` in its meta, so history shows the lines and
the next prompt has them. :meth:`GroupTurns.speak` makes one member answer now, on a new floor
with no input (a turn not started by a user).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from engine.group.activation import activate
from engine.group.settings import group_of
from engine.ports import EventSink, RandomSource, Storage
from engine.prompt.regex_budget import RegexBudget
from engine.timeline.errors import TimelineNotFoundError
from engine.timeline.opening import open_generating
from engine.timeline.service import TimelineService
from engine.timeline.values import Branch, Floor, NewMessage, Page, PageContext
from engine.turns.api import OnReply, OnSpeaker, OnText, ReplyView, SessionKey
from engine.turns.context import TIMED_STATE_META, read_turn
from engine.turns.events import emit
from engine.turns.failures import TurnFailures, records_a_failed_floor
from engine.turns.members import find_name, member
from engine.turns.parsed_assets import SessionAssets, load_assets
from engine.turns.sessions import SessionIds
from engine.turns.views import UNANSWERED_META

if TYPE_CHECKING:  # the turn service runs each reply; it builds this part around itself
    from engine.turns.turns import Turns

__all__ = ["SEED_RANGE", "GroupTurns", "called_members", "draw_seed", "speakers_of"]

SEED_RANGE: Final = 2**31
"""Activation seeds are drawn from ``[0, SEED_RANGE)`` (they fit the floor's integer column)."""


def draw_seed(rng: RandomSource) -> int:
    """A new activation seed from the service's randomness."""
    return min(int(rng.random() * SEED_RANGE), SEED_RANGE - 1)


def speakers_of(assets: SessionAssets, inputs: Sequence[NewMessage], seed: int) -> tuple[str, ...]:
    """Who answers ``inputs`` in the group of ``assets`` with ``seed`` (the same members
    every time for the same seed, members and cards)."""
    if assets.settings is None:
        return ()
    text = "\n".join(m.raw for m in inputs if m.role == "user")
    return activate(
        assets.settings, talkativeness=assets.talkativeness, user_input=text, seed=seed
    )


def called_members(assets: SessionAssets, called: Sequence[str]) -> tuple[str, ...]:
    """The group's members that ``called`` names (as :func:`find_name` finds them), each once
    and in order; names that are not members are left out (empty in a solo session)."""
    if assets.settings is None:
        return ()
    found = (find_name(assets.settings.members, name) for name in called)
    return tuple(dict.fromkeys(name for name in found if name is not None))


class GroupTurns:
    """Respond and speak in a group session (see the module docstring)."""

    def __init__(
        self,
        turns: Turns,
        storage: Storage,
        timeline: TimelineService,
        *,
        failures: TurnFailures,
        events: EventSink,
        rng: RandomSource,
    ) -> None:
        self._turns = turns
        self._storage = storage
        self._timeline = timeline
        self._failures = failures
        self._events = events
        self._rng = rng

    async def respond(
        self,
        key: SessionKey,
        ids: SessionIds,
        target: Branch,
        assets: SessionAssets,
        inputs: Sequence[NewMessage],
        *,
        regex_budget: RegexBudget,
        on_text: OnText | None,
        on_speaker: OnSpeaker | None,
        on_reply: OnReply | None,
        called: Sequence[str] = (),
    ) -> ReplyView:
        """A user's turn in a group (the caller holds the branch's lock and has applied the
        input regex scripts): the chosen members answer one after another; the last reply's
        view is returned (``unanswered`` when nobody answered). The members ``called`` names
        (a platform reply to a member's message) answer instead of the strategy's choice,
        muted or not, as ``speak`` would make them."""
        # The seed is drawn and stored even for called members: it marks the turn's first
        # floor (the one holding the user's lines), which edits look for.
        seed = draw_seed(self._rng)
        speakers = called_members(assets, called) or speakers_of(assets, inputs, seed)
        if not speakers:
            return await self._reply(
                key, ids, target, None, inputs, seed, answer=False, on_reply=on_reply
            )
        view: ReplyView | None = None
        for index, speaker in enumerate(speakers):
            first = index == 0
            view = await self._reply(
                key,
                ids,
                target,
                speaker,
                inputs if first else (),
                seed if first else None,
                regex_budget=regex_budget if first else None,
                on_text=on_text,
                on_speaker=on_speaker,
                on_reply=on_reply,
            )
        assert view is not None
        return view

    async def speak(
        self,
        key: SessionKey,
        ids: SessionIds,
        target: Branch,
        name: str,
        *,
        on_text: OnText | None,
        on_reply: OnReply | None,
    ) -> ReplyView:
        """The character ``name`` answers now on a new floor with no input (the caller holds
        the branch's lock). In a solo session that is its one character (the floor keeps no
        speaker, as every solo floor)."""
        async with self._storage.read() as uow:
            session = await uow.sessions.get(ids.session_id)
        speaker = member(session.settings, name, where=f"session {key.key}")
        solo = group_of(session.settings.extra) is None
        return await self._reply(
            key,
            ids,
            target,
            None if solo else speaker,
            (),
            None,
            on_text=on_text,
            on_reply=on_reply,
        )

    async def _reply(
        self,
        key: SessionKey,
        ids: SessionIds,
        target: Branch,
        speaker: str | None,
        inputs: Sequence[NewMessage],
        seed: int | None,
        *,
        answer: bool = True,
        regex_budget: RegexBudget | None = None,
        on_text: OnText | None = None,
        on_speaker: OnSpeaker | None = None,
        on_reply: OnReply | None = None,
    ) -> ReplyView:
        """One floor of a group turn: opened with ``inputs`` for ``speaker``, then its reply
        generated and committed (or, without ``answer``, committed with no reply)."""
        floor: Floor | None = None
        page: Page | None = None
        try:
            async with self._storage.unit_of_work() as uow:
                session, branches = await uow.sessions.get_with_branches(ids.session_id)
                current = next((b for b in branches if b.id == target.id), None)
                if current is None:
                    raise TimelineNotFoundError(f"branch {target.name!r} no longer exists")
                assets = await load_assets(uow, session, speaker=speaker)
                new = await open_generating(
                    uow,
                    current,
                    branches,
                    inputs,
                    owner=self._timeline.owner,
                    speaker=speaker,
                    seed=seed,
                )
                read = await read_turn(
                    uow,
                    session=session,
                    floor=new.floor,
                    mode="respond",
                    assets=assets,
                    branches=branches,
                )
            floor, page = new.floor, new.page
            emit(self._events, "floor.created", branch_id=target.id, floor=floor.seq)
            emit(self._events, "floor.stateChanged", floor_id=floor.id, state="generating")
            for message in inputs:
                emit(
                    self._events,
                    "message.appended",
                    session=key.key,
                    branch=target.name,
                    floor=floor.seq,
                    role="user",
                    text=message.raw,
                )
            known = PageContext(page=page, floor=floor, branch=current, realm_id=ids.realm_id)
            if not answer:
                # The lines stay in the story with no reply; the world-info timed state of
                # the floor before carries over to the next turn.
                meta = {UNANSWERED_META: True, TIMED_STATE_META: read.timed_state.to_json()}
                await self._timeline.commit_page(page.id, meta=meta, known=known)
                view = ReplyView(
                    session=key,
                    branch=target.name,
                    floor=floor.seq,
                    page=1,
                    pages=1,
                    text="",
                    character="",
                    unanswered=True,
                )
            else:
                if on_speaker is not None:
                    await on_speaker(read.assets.character.name)
                view = await self._turns.run_reply(
                    key,
                    ids,
                    current,
                    floor,
                    page,
                    "respond",
                    on_text,
                    read=read,
                    known=known,
                    regex_budget=regex_budget,
                )
        except BaseException as exc:
            if floor is None and inputs and records_a_failed_floor(exc):
                floor = await self._failures.record_failed_open(target.id, inputs)
            raise await self._failures.failed(floor, page, exc) from exc
        if on_reply is not None:
            await on_reply(view)
        return view
