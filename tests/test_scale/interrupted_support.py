"""Support for the interrupted-reply notice tests (issue 19): a floor left ``generating`` by a
process whose lease expired (or still stands), and another live "process" that sweeps: its own
service, event bus and notices on the same database, telling chats through a front end."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from adapters.llm import OfflineChatModel
from adapters.storage import SqlStorage
from bot.events import EventBus
from bot.notices import InterruptedNotice, InterruptedNotices
from engine.timeline.leases import LeaseKeeper
from engine.timeline.service import TimelineService
from engine.timeline.values import NewMessage
from engine.turns.api import MAIN_BRANCH, SessionKey
from engine.turns.profiles import LLMProfile, NoSecretCipher
from engine.turns.service import TavernService

Tell = Callable[[SessionKey, str, int], Awaitable[object]]


class FixedClock:
    """A clock standing at one moment."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


async def generating(
    storage: SqlStorage, key: SessionKey, text: str, *, owner: str, speaker: str | None = None
) -> int:
    """Open a floor with ``text`` (said by ``speaker``, a user id) on the session's main branch
    and leave it generating, owned by ``owner``; its id."""
    async with storage.read() as uow:
        session = await uow.sessions.find(key.platform, key.key)
        assert session is not None
        branch = await uow.branches.find(session.id, MAIN_BRANCH)
        assert branch is not None
    timeline = TimelineService(storage, owner=owner)
    said = NewMessage(role="user", raw=text, speaker_id=speaker)
    floor = await timeline.open_floor(branch.id, [said])
    await timeline.start_generating(floor.id)
    await timeline.add_page(floor.id)
    return floor.id


async def lease(storage: SqlStorage, owner: str, *, renewed_at: datetime) -> None:
    """A lease row of ``owner``, a process of another host, last renewed at ``renewed_at``."""
    keeper = LeaseKeeper(storage, clock=FixedClock(renewed_at), owner=owner, host="elsewhere")
    await keeper.renew()


async def generating_ids(storage: SqlStorage) -> set[int]:
    """The ids of the floors generating now."""
    async with storage.read() as uow:
        return {f.id for f in await uow.floors.in_state("generating")}


def sweeper(
    storage: SqlStorage, platform: str, tell: Tell
) -> tuple[TavernService, InterruptedNotices]:
    """Another live process on the same database: its own service, bus and notices, telling
    ``platform``'s chats with ``tell`` (run the notices' :meth:`~InterruptedNotices.run`)."""
    bus = EventBus()
    notices = InterruptedNotices()
    bus.subscribe("floor.failed", notices.on_event)

    async def notify(notice: InterruptedNotice) -> None:
        await tell(notice.key, notice.branch, notice.floor)

    notices.register(platform, notify)
    quiet = OfflineChatModel(announce=False)  # the sweeper plays no turn
    service = TavernService(
        storage,
        model_for=lambda profile: quiet,
        default_profile=LLMProfile(id="environment", provider="offline", model="offline"),
        events=bus,
        cipher=NoSecretCipher(),
    )
    return service, notices
