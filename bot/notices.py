"""Telling a chat that its reply was interrupted: a floor a dead process left ``generating``
and this process's recovery (start-up or the heartbeat's sweep) failed.

The engine emits ``floor.failed`` with ``interrupted`` only in the process whose
compare-and-set failed the floor, so each chat is told at most once across processes. Each
front end registers the platform it serves with an async ``notify(notice)``; start-up
recovery runs before the front ends start, so notices of a platform not registered yet wait
(at most :data:`MAX_PENDING_NOTICES`) and go out when it registers. A platform this process
does not serve never registers: its notices are dropped with the oldest waiting one.
Delivery runs in one owned task (:meth:`InterruptedNotices.run`), never in the emitter.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from engine.ports import Event
from engine.timeline.service import Claims
from engine.turns.api import SessionKey

if TYPE_CHECKING:
    from bot.config import Settings

log = logging.getLogger(__name__)

MAX_PENDING_NOTICES: Final = 200
"""Notices kept for platforms whose front end has not registered yet (the oldest goes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InterruptedNotice:
    """A floor whose reply was interrupted: its session, branch and floor number."""

    key: SessionKey
    branch: str
    floor: int


Notify = Callable[[InterruptedNotice], Awaitable[None]]


def notice_of(event: Event) -> InterruptedNotice | None:
    """The notice an event carries: a ``floor.failed`` by recovery with its place, else None."""
    payload = event.payload
    if event.name != "floor.failed" or not payload.get("interrupted"):
        return None
    try:
        key = SessionKey(
            platform=str(payload["platform"]),
            realm=str(payload["realm"]),
            key=str(payload["session"]),
        )
        return InterruptedNotice(
            key=key, branch=str(payload["branch"]), floor=int(payload["floor"])
        )
    except (KeyError, TypeError, ValueError):
        return None


class InterruptedNotices:
    """Routes interrupted-floor notices to the front end serving their platform."""

    def __init__(self) -> None:
        self._handlers: dict[str, Notify] = {}
        self._pending: deque[InterruptedNotice] = deque(maxlen=MAX_PENDING_NOTICES)
        self._ready: asyncio.Queue[InterruptedNotice] = asyncio.Queue()

    def on_event(self, event: Event) -> None:
        """The event bus's subscriber (``floor.failed``): queue the notice, never block."""
        notice = notice_of(event)
        if notice is None:
            return
        if notice.key.platform in self._handlers:
            self._ready.put_nowait(notice)
        else:
            self._pending.append(notice)

    def register(self, platform: str, notify: Notify) -> None:
        """``notify`` tells ``platform``'s chats from now on, starting with those waiting."""
        self._handlers[platform] = notify
        waiting = [n for n in self._pending if n.key.platform == platform]
        for notice in waiting:
            self._pending.remove(notice)
            self._ready.put_nowait(notice)

    def unregister(self, platform: str) -> None:
        """Stop telling ``platform``'s chats (its front end stopped)."""
        self._handlers.pop(platform, None)

    @property
    def pending(self) -> tuple[InterruptedNotice, ...]:
        """Notices waiting for their platform's front end."""
        return tuple(self._pending)

    async def run(self) -> None:
        """Deliver queued notices until cancelled; a failed delivery is logged, not retried
        (the floor stays failed and its chat's history shows it)."""
        while True:
            notice = await self._ready.get()
            notify = self._handlers.get(notice.key.platform)
            if notify is None:
                self._pending.append(notice)
                continue
            try:
                await notify(notice)
            except Exception:  # one chat's failure must not stop the others' notices
                log.exception("could not tell %s that its reply was interrupted", notice.key)


def run_claims(settings: Settings) -> Claims:
    """Which sessions a ``tavernbot run`` with ``settings`` fails when their process died:
    those it can tell (Telegram chats with a Telegram token, Discord channels of its shards,
    console sessions when it runs the console); other platforms' sessions are left to a
    process that serves them, so an interrupted reply is never failed in silence."""
    telegram = bool(settings.telegram.token and settings.telegram.token.get_secret_value())
    discord_on = bool(settings.discord.token and settings.discord.token.get_secret_value())
    discord_serves: Callable[[str], bool] | None = None
    if discord_on:
        from adapters.discord.interrupted import serves
        from bot.platforms import discord_options

        options = discord_options(settings.discord)
        discord_serves = functools.partial(serves, options)
    console = not telegram and not discord_on

    def claims(platform: str, realm: str) -> bool:
        if platform == "telegram":
            return telegram
        if platform == "discord":
            return discord_serves is not None and discord_serves(realm)
        if platform == "console":
            return console
        return True  # a session no front end plays: any process fails it

    return claims
