"""What the Telegram front end remembers between updates.

- One lock per chat (and forum topic), taken before anything else is awaited, so that updates of
  one chat are handled in the order Telegram delivered them and one turn runs at a time.
- The latest reply shown per branch (its message ids), to move the swipe keyboard and to edit
  the reply in place on a swipe; in a group turn, the earlier replies of the same turn too (each
  keeps its keyboard until the next turn). Kept in memory: after a restart the keyboard still
  works on the message it is under.
- Which sessions play a group of characters (their replies are prefixed with the speaker's
  name in private chats too), learnt from the session's info and from group turns.
- The current branch of each private chat: the service keeps it (``current_branch`` /
  ``set_current_branch``) and it is read from there for every update (one small read), so a
  switch made through another process (or before a restart) is where the next message plays;
  the last value read is only a fallback for when the service cannot answer.
- Group admin checks, cached for ``ADMIN_CACHE_S``; recently seen update ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass

from adapters.telegram.config import ADMIN_CACHE_S, SEEN_UPDATES
from adapters.telegram.inbox import Inbox
from engine.errors import EngineError
from engine.turns.api import MAIN_BRANCH, RoleplayService, SessionInfo, SessionKey

log = logging.getLogger("tavernbot.telegram.state")


@dataclass(frozen=True, slots=True, kw_only=True)
class Shown:
    """The messages that show a branch's latest reply, and which floor and page they show
    (page 0: the floor failed, and the messages show its error)."""

    message_ids: tuple[int, ...]
    floor: int
    page: int
    pages: int
    kept: tuple[int, ...] = ()
    """The last messages of the earlier replies of the same group turn: their keyboards stay
    (the page counter shows; their buttons answer that only the latest reply swipes)."""


@dataclass
class _Lock:
    lock: asyncio.Lock
    users: int = 0


class ChatState:
    """The adapter's memory (see the module docstring)."""

    def __init__(self, service: RoleplayService) -> None:
        self.service = service
        self._locks: dict[tuple[int, int | None], _Lock] = {}
        self._shown: dict[tuple[SessionKey, str], Shown] = {}
        self._branches: dict[SessionKey, str] = {}
        self._admins: dict[tuple[int, int], tuple[bool, float]] = {}
        self._seen: OrderedDict[int, None] = OrderedDict()
        self.inbox = Inbox()
        self.characters: dict[SessionKey, str] = {}
        """The character who spoke last in each session (the group reply prefix)."""
        self.groups: set[SessionKey] = set()
        """Sessions known to play a group of characters (see :meth:`note_group`)."""

    # ----------------------------------------------------------------- ordering
    @contextlib.asynccontextmanager
    async def ordered(self, chat_id: int, thread_id: int | None = None) -> AsyncIterator[None]:
        """Hold the chat's (or topic's) lock; waiters are served first come, first served."""
        key = (chat_id, thread_id)
        entry = self._locks.setdefault(key, _Lock(asyncio.Lock()))
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                self._locks.pop(key, None)

    def first_sight(self, update_id: int) -> bool:
        """True the first time an update id is seen (a redelivered update is dropped)."""
        if update_id in self._seen:
            return False
        self._seen[update_id] = None
        if len(self._seen) > SEEN_UPDATES:
            self._seen.popitem(last=False)
        return True

    # ----------------------------------------------------------------- replies shown
    def shown(self, key: SessionKey, branch: str) -> Shown | None:
        return self._shown.get((key, branch))

    def show(self, key: SessionKey, branch: str, shown: Shown) -> Shown | None:
        """Record the latest reply of a branch; return the one it replaces."""
        previous = self._shown.get((key, branch))
        self._shown[(key, branch)] = shown
        return previous

    def note_group(self, info: SessionInfo) -> None:
        """Remember whether the session of ``info`` plays a group (it has members)."""
        if info.members:
            self.groups.add(info.key)
        else:
            self.groups.discard(info.key)

    def forget(self, key: SessionKey) -> None:
        """Drop everything remembered about a session (after ``/reset``)."""
        for entry in [k for k in self._shown if k[0] == key]:
            del self._shown[entry]
        self._branches.pop(key, None)

    # ----------------------------------------------------------------- current branch
    async def current_branch(self, key: SessionKey) -> str:
        """The branch a private chat plays on (``main`` until it switches), read through:
        another process may have switched it."""
        try:
            branch = await self.service.current_branch(key)
        except EngineError as exc:
            branch = self._branches.get(key, MAIN_BRANCH)
            log.warning("current branch of %s unknown, playing on %s: %s", key, branch, exc)
            return branch
        self._branches[key] = branch
        return branch

    async def switch_branch(self, key: SessionKey, branch: str) -> None:
        """Make ``branch`` the chat's current branch (stored by the service)."""
        self._branches[key] = branch
        try:
            await self.service.set_current_branch(key, branch)
        except EngineError as exc:
            log.warning("current branch of %s kept in memory only: %s", key, exc)

    # ----------------------------------------------------------------- admins
    def cached_admin(self, chat_id: int, user_id: int) -> bool | None:
        hit = self._admins.get((chat_id, user_id))
        if hit is None or time.monotonic() - hit[1] > ADMIN_CACHE_S:
            return None
        return hit[0]

    def remember_admin(self, chat_id: int, user_id: int, is_admin: bool) -> None:
        self._admins[(chat_id, user_id)] = (is_admin, time.monotonic())
