"""Turns on Discord: a floor of lines -> one streamed reply; regenerate and swipe that reply.

One generation at a time per branch (a lock per branch; lines arriving meanwhile wait for the
next floor). The reply streams into messages while the model writes, then shows the final page,
with a small ``‹ n/m ›`` marker when the floor has several pages. Every message is linked to its
floor and page in the service, so reactions, threads and deletions find their way back. A reply
that Discord refused after every retry is kept and delivered again later; it is never generated
a second time. A turn that fails (the model returned no text, an error) says so where the reply
would have been; its floor keeps the input, and 🔄 on the notice (or on the input) retries it,
turning the notice into the reply. A new chat's first floor is the card's greeting
(:meth:`Turns.greet`), posted and linked like any reply.

In a group each member's reply is its own message under the member's name (see
:mod:`adapters.discord.replies`); a user's Discord reply to a member's message calls that member
(it answers the floor instead of the group's strategy), and ``/group speak`` makes one answer now.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

import discord

from adapters.discord.budget import EditBudget
from adapters.discord.calls import Calls
from adapters.discord.convert import Place
from adapters.discord.options import DiscordOptions
from adapters.discord.outlets import DeliveryError, Outlet, OutletGoneError, Outlets
from adapters.discord.replies import TurnReplies
from adapters.discord.sessions import Binding, Sessions
from adapters.discord.stream import Delivered, ReplyStream
from adapters.discord.tasks import TaskOwner
from engine.errors import EngineError
from engine.incidents import TURN_FAILED, shown_error
from engine.turns.api import PlatformRef, ReplyView, RoleplayService, SessionKey, UserLine

_log = logging.getLogger(__name__)
TYPING_REFRESH_S = 8.0  # Discord shows "typing" for about 10 s per request
MAX_TRACKED_REPLIES = 10_000
MAX_SELF_DELETED = 10_000


def page_marker(page: int, pages: int) -> str:
    """The small marker under a reply with several pages."""
    return f"\n-# ‹ {page}/{pages} ›" if pages > 1 else ""


def render(view: ReplyView) -> str:
    """A page as shown on Discord."""
    return (view.text.strip() or "…") + page_marker(view.page, view.pages)


@dataclass
class ReplyRecord:
    """The latest reply of a branch: its floor, page, speakers and the messages showing it.

    ``failed``: the floor has no reply yet and the messages show why (🔄 retries it)."""

    place: Place
    floor: int
    page: int
    pages: int
    speakers: frozenset[str]
    delivered: Delivered
    failed: bool = False
    character: str = ""
    """Who speaks the reply (the webhook's name); empty: the session's character."""

    @classmethod
    def of(cls, place: Place, view: ReplyView, speakers: frozenset[str]) -> ReplyRecord:
        """The record of ``view``, just committed in ``place`` (on the view's branch), before
        any message shows it."""
        return cls(
            replace(place, branch=view.branch),
            view.floor,
            view.page,
            view.pages,
            speakers,
            Delivered(),
            character=view.character,
        )


class Turns:
    """Runs floors, regenerations and swipes for bound places (see the module docstring)."""

    def __init__(
        self,
        *,
        client: discord.Client,
        service: RoleplayService,
        sessions: Sessions,
        outlets: Outlets,
        budget: EditBudget,
        tasks: TaskOwner,
        options: DiscordOptions,
    ) -> None:
        self.client = client
        self.service = service
        self.sessions = sessions
        self.outlets = outlets
        self.budget = budget
        self.tasks = tasks
        self.options = options
        self._locks: dict[tuple[SessionKey, str], asyncio.Lock] = {}
        self.latest: dict[tuple[SessionKey, str], ReplyRecord] = {}
        self.by_message: OrderedDict[int, ReplyRecord] = OrderedDict()
        self.self_deleted: OrderedDict[int, None] = OrderedDict()
        self.calls = Calls(service, self.by_message)
        self.undelivered = 0
        self.service_s = 0.0  # time spent inside respond() (the model and the engine)
        self.floor_s = 0.0  # time from a floor's flush to its delivered reply
        self.held_s = 0.0  # time a floor held its branch (outlet, generation, delivery)
        self.floors_done = 0

    def forget_session(self, key: SessionKey) -> None:
        """Drop what is remembered of a session's replies (after a reset)."""
        for place_key in [k for k in self.latest if k[0] == key]:
            del self.latest[place_key]
        for message_id in [m for m, r in self.by_message.items() if r.place.key == key]:
            del self.by_message[message_id]

    def branch_lock(self, key: SessionKey, branch: str) -> asyncio.Lock:
        """The lock that keeps one generation at a time on a branch."""
        return self._locks.setdefault((key, branch), asyncio.Lock())

    # ------------------------------------------------------------------ floors
    async def floor(self, place: Place, lines: list[UserLine]) -> None:
        """Record ``lines`` as one floor and deliver the reply (the collector's flush); in a
        group, every member's reply that answers it, each as its own message."""
        binding = await self.sessions.binding(place.key)
        if binding is None or not lines:
            return
        await self.sessions.ensure_branch(place, binding)
        speakers = frozenset(line.speaker.id for line in lines)
        called = self.calls.take(lines)
        begun = asyncio.get_running_loop().time()
        async with self.branch_lock(place.key, place.branch):
            held_from = asyncio.get_running_loop().time()
            replies = self._replies(place, binding, speakers)
            await replies.start(binding.character)
            started = asyncio.get_running_loop().time()
            try:
                async with self._typing(place):
                    view = await self.service.respond(
                        place.key,
                        place.branch,
                        lines,
                        on_text=replies.on_text,
                        on_speaker=replies.on_speaker,
                        on_reply=replies.on_reply,
                        called=called,
                    )
            except EngineError as exc:
                _log.warning("respond failed in %s: %s", place.key, exc)
                failed = await self._fail(await replies.stream(), exc, place, speakers)
                first = replies.first_floor or (failed.floor if failed is not None else None)
                if first is not None:
                    await self._link_inputs(place, first, lines)
                return
            finally:
                self.service_s += asyncio.get_running_loop().time() - started
            if not replies.delivered and not view.unanswered:
                # A solo turn: its one reply is delivered here (a group's were as they came;
                # a group turn nobody answered shows nothing until a member is called).
                binding.character, binding.avatar_url = view.character, view.avatar_url
                record = ReplyRecord.of(place, view, speakers)
                await self._deliver(await replies.stream(), record, view)
            self.held_s += asyncio.get_running_loop().time() - held_from
        self.floors_done += 1
        self.floor_s += asyncio.get_running_loop().time() - begun
        first = replies.first_floor or view.floor
        await self._link_inputs(replace(place, branch=view.branch), first, lines)

    def _replies(self, place: Place, binding: Binding, speakers: frozenset[str]) -> TurnReplies:
        """The callbacks that post one turn's replies, each under its speaker's name."""

        async def open_stream(name: str | None) -> ReplyStream:
            avatar = binding.avatar_url if name in (None, binding.character) else None
            return await self._stream(place, name or binding.character, avatar, previous=None)

        async def deliver(stream: ReplyStream, view: ReplyView) -> None:
            record = ReplyRecord.of(place, view, speakers)
            await self._deliver(stream, record, view)

        return TurnReplies(open_stream=open_stream, deliver=deliver)

    async def speak(self, place: Place, name: str, *, speaker_id: str) -> ReplyView | None:
        """The member ``name`` answers now (``/group speak``) under its own name, posted and
        linked like any reply (``speaker_id``, who called it, may react on it). A failure is
        shown where the reply would have been, then raised for the command to answer."""
        binding = await self.sessions.binding(place.key)
        if binding is None:
            return None
        await self.sessions.ensure_branch(place, binding)
        speakers = frozenset({speaker_id})
        async with self.branch_lock(place.key, place.branch):
            stream = await self._stream(place, name, None, previous=None)
            try:
                async with self._typing(place):
                    view = await self.service.speak(
                        place.key, place.branch, name, on_text=stream.update
                    )
            except EngineError as exc:
                _log.warning("speak failed in %s: %s", place.key, exc)
                await self._fail(stream, exc, place, speakers)
                raise
            record = ReplyRecord.of(place, view, speakers)
            await self._deliver(stream, record, view)
        return view

    async def greet(self, place: Place, *, user_name: str, speaker_id: str) -> ReplyView | None:
        """Open the place's branch with the character's greeting (SillyTavern's new chat opens
        with the card's first message), posted as the character like any reply and linked to
        floor 1, so reactions swipe its alternates. Nothing when the branch has a floor already
        (greeted before, in this run or an earlier one) or the card has no greeting.
        ``speaker_id`` (who opened the chat) may react on it as on their own floor's reply."""
        binding = await self.sessions.binding(place.key)
        if binding is None:
            return None
        await self.sessions.ensure_branch(place, binding)
        async with self.branch_lock(place.key, place.branch):
            try:
                view = await self.service.greet(place.key, place.branch, user_name=user_name)
            except EngineError as exc:
                _log.warning("no greeting in %s: %s", place.key, exc)
                return None
            if view is None:
                return None
            binding.character, binding.avatar_url = view.character, view.avatar_url
            stream = await self._stream(place, view.character, view.avatar_url, previous=None)
            record = ReplyRecord.of(place, view, frozenset({speaker_id}))
            await self._deliver(stream, record, view)
        return view

    async def _link_inputs(self, place: Place, floor: int, lines: list[UserLine]) -> None:
        """Link the users' messages to their floor (reactions and deletions find it)."""
        for line in lines:
            if line.ref is not None:
                user_ref = PlatformRef(branch=place.branch, floor=floor, page=None, role="user")
                await self.service.link_message(place.key, line.ref, user_ref)

    async def regenerate(self, record: ReplyRecord, *, floor: int | None = None) -> None:
        """Add a page to the latest floor and show it in the reply's messages. ``floor``:
        the record shows that earlier member's reply of the latest group turn instead; when
        the engine refuses or fails it, the error is raised and the message keeps (or gets
        back) the page it showed."""
        place = record.place
        binding = await self.sessions.binding(place.key)
        if binding is None:
            return
        async with self.branch_lock(place.key, place.branch):
            stream = await self._stream_for(record, binding)
            try:
                async with self._typing(place):
                    view = await self.service.regenerate(
                        place.key, place.branch, floor=floor, on_text=stream.update
                    )
            except EngineError as exc:
                _log.warning("regenerate failed in %s: %s", place.key, exc)
                if floor is not None:
                    await self._restore(stream, record, floor)
                    raise
                await self._fail(stream, exc, place, record.speakers)
                return
            new = ReplyRecord.of(place, view, record.speakers)
            await self._deliver(stream, new, view)

    async def swipe(self, record: ReplyRecord, step: int, *, floor: int | None = None) -> None:
        """Show the previous (-1) or next (+1) page of the latest floor (``floor``: of that
        earlier member's reply of the latest group turn; a refusal is raised)."""
        place = record.place
        binding = await self.sessions.binding(place.key)
        if binding is None:
            return
        async with self.branch_lock(place.key, place.branch):
            view = await self.service.swipe(place.key, place.branch, step, floor=floor)
            stream = await self._stream_for(record, binding)
            new = ReplyRecord.of(place, view, record.speakers)
            await self._deliver(stream, new, view)

    async def _restore(self, stream: ReplyStream, record: ReplyRecord, floor: int) -> None:
        """After a refused or failed regenerate of an earlier reply: show the page its floor
        still has (the engine left it as it was) over anything streamed. A floor the engine
        will not even swipe was never touched: its message stays as it is."""
        try:
            view = await self.service.swipe(record.place.key, record.place.branch, 0, floor=floor)
        except EngineError as exc:
            _log.info("floor %s of %s stays as shown: %s", floor, record.place.key, exc)
            return
        kept = replace(record, page=view.page, pages=view.pages, delivered=Delivered())
        await self._deliver(stream, kept, view)

    # ------------------------------------------------------------------ delivery
    async def _stream_for(self, record: ReplyRecord, binding: Binding) -> ReplyStream:
        """A stream that edits ``record``'s messages (a repost goes out under its speaker)."""
        name = record.character or binding.character
        avatar = binding.avatar_url if name == binding.character else None
        return await self._stream(record.place, name, avatar, previous=record.delivered)

    async def _stream(
        self,
        place: Place,
        character: str | None,
        avatar_url: str | None,
        *,
        previous: Delivered | None,
    ) -> ReplyStream:
        name = character or "Narrator"

        async def reopen() -> Outlet:
            self.outlets.invalidate(place.channel_id)
            return await self.outlets.outlet(place, name, avatar_url)

        outlet = await self.outlets.outlet(place, name, avatar_url)
        return ReplyStream(
            outlet=outlet,
            reopen=reopen,
            budget=self.budget,
            budget_key=place.thread_id or place.channel_id,
            tasks=self.tasks,
            attempts=self.options.delivery_attempts,
            backoff_s=self.options.delivery_backoff_s,
            previous=previous,
            on_delete=self._note_self_delete,
        )

    def _note_self_delete(self, message_id: int) -> None:
        self.self_deleted[message_id] = None
        while len(self.self_deleted) > MAX_SELF_DELETED:
            self.self_deleted.popitem(last=False)

    async def _deliver(self, stream: ReplyStream, record: ReplyRecord, view: ReplyView) -> None:
        text = render(view)
        try:
            record.delivered = await stream.finish(text)
        except (DeliveryError, OutletGoneError) as exc:
            self.undelivered += 1
            _log.error("reply not delivered yet in %s: %s", record.place.key, exc)
            self.tasks.spawn(self._redeliver(stream, record, view), name="redeliver")
            return
        await self._registered(record, view)

    async def _redeliver(self, stream: ReplyStream, record: ReplyRecord, view: ReplyView) -> None:
        """Deliver the same text again later; the model is never called again for it."""
        for _ in range(self.options.redelivery_rounds):
            await asyncio.sleep(self.options.redelivery_delay_s)
            try:
                record.delivered = await stream.finish(render(view))
            except (DeliveryError, OutletGoneError) as exc:
                _log.warning("redelivery failed: %s", exc)
                continue
            self.undelivered -= 1
            await self._registered(record, view)
            return
        _log.error("gave up delivering floor %s of %s", view.floor, record.place.key)

    async def _registered(self, record: ReplyRecord, view: ReplyView) -> None:
        place = record.place
        self._remember(record)
        ref = PlatformRef(branch=view.branch, floor=view.floor, page=view.page, role="assistant")
        for message_id in record.delivered.message_ids:
            await self.service.link_message(place.key, str(message_id), ref)

    async def _fail(
        self, stream: ReplyStream, exc: EngineError, place: Place, speakers: frozenset[str]
    ) -> ReplyRecord | None:
        """Say in place (replacing any streamed text, the ``…`` included) that this floor got
        no reply; when the branch's latest floor is now a failed one, remember the notice as
        its reply so that 🔄 on it retries the floor. Returns that record."""
        notice = f"*(no reply: {shown_error(exc, TURN_FAILED, logger=_log)})*"
        try:
            delivered = await stream.finish(notice)
        except EngineError as error:
            _log.error("the failure notice was not delivered in %s: %s", place.key, error)
            delivered = stream.shown
        try:
            views = await self.service.history(place.key, place.branch, limit=1)
        except EngineError as error:
            _log.warning("could not read the failed floor in %s: %s", place.key, error)
            return None
        if not views or not views[-1].failed:
            return None  # nothing was recorded (e.g. the input itself was refused)
        view = views[-1]
        record = ReplyRecord(
            place, view.floor, view.page, view.pages, speakers, delivered, failed=True
        )
        self._remember(record)
        return record

    def remember_failed(self, record: ReplyRecord) -> None:
        """Remember a notice shown for a failed floor (recovery's) so 🔄 on it retries it."""
        self._remember(record)

    def _remember(self, record: ReplyRecord) -> None:
        place = record.place
        known = self.latest.get((place.key, place.branch))
        if known is None or record.floor >= known.floor:  # an earlier reply changed: not latest
            self.latest[(place.key, place.branch)] = record
        for message_id in record.delivered.message_ids:
            self.by_message[message_id] = record
        while len(self.by_message) > MAX_TRACKED_REPLIES:
            self.by_message.popitem(last=False)

    @contextlib.asynccontextmanager
    async def _typing(self, place: Place) -> AsyncIterator[None]:
        channel = self.client.get_channel(place.thread_id or place.channel_id)

        async def keep_typing() -> None:
            while isinstance(channel, discord.abc.Messageable):
                try:
                    await channel.typing()
                except (discord.HTTPException, OSError) as exc:
                    _log.debug("typing indicator failed: %s", exc)
                await asyncio.sleep(TYPING_REFRESH_S)

        task = self.tasks.spawn(keep_typing(), name="typing")
        try:
            yield
        finally:
            task.cancel()
