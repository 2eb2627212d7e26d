"""Which channels are bound to a session, and which threads are branches of it.

A channel is bound when its session exists in the service (``/tavern start``, the config, or an
earlier run) and is not closed (``/tavern stop`` closes it in the service, so it stays stopped
across restarts). The reply policy is the session's own setting (``set_session_option``); a
session without one uses the adapter's default. Several processes may serve one database (a
channel bound, stopped or given another character through one of them, or through the
console), so whether a channel is bound, its policy and its character are read from the
session's row for every message (``session_state``: one small read, no branches); only the
branch names are kept (branches are never deleted, and a missing one is looked up again before
forking). A thread becomes its branch on first use: a thread
opened on a bot reply forks after that reply's floor, any other thread forks after the latest
floor.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from adapters.discord.convert import Place
from engine.errors import NotFoundError
from engine.turns.api import MAIN_BRANCH, ReplyPolicy, RoleplayService, SessionInfo, SessionKey

_log = logging.getLogger(__name__)
MAX_CACHED_SESSIONS = 50_000


@dataclass
class Binding:
    """What the adapter knows about a bound session."""

    key: SessionKey
    character: str | None
    policy: ReplyPolicy
    branches: set[str] = field(default_factory=set)
    avatar_url: str | None = None
    stored_character: str | None = None
    """The session's character as last read from its row (``character`` may be the last
    group member who spoke): a change means someone swapped the character."""


class Sessions:
    """Bound channels and their branches (see the module docstring)."""

    def __init__(self, service: RoleplayService, *, default_policy: ReplyPolicy) -> None:
        self.service = service
        self.default_policy = default_policy
        self._bound: dict[SessionKey, Binding] = {}
        self._locks: dict[SessionKey, asyncio.Lock] = {}

    def lock(self, key: SessionKey) -> asyncio.Lock:
        """The session's lock (forks and binding changes are serialised per session)."""
        return self._locks.setdefault(key, asyncio.Lock())

    def _remember(self, info: SessionInfo) -> Binding:
        if len(self._bound) > MAX_CACHED_SESSIONS:
            self._bound.clear()
        binding = Binding(
            key=info.key,
            character=info.character,
            policy=info.reply_policy or self.default_policy,
            branches={b.name for b in info.branches},
            stored_character=info.character,
        )
        self._bound[info.key] = binding
        return binding

    async def binding(self, key: SessionKey) -> Binding | None:
        """The binding of a session key, or None when the channel is not bound (checked
        against the session's row each time: see the module docstring)."""
        state = await self.service.session_state(key)
        if state is None or state.closed:
            # Never started, or stopped with /tavern stop (here, in another process or an
            # earlier run): the data stays.
            self._bound.pop(key, None)
            return None
        known = self._bound.get(key)
        if known is None:
            try:
                info = await self.service.session_info(key)
            except NotFoundError:
                return None
            return self._remember(info)
        known.policy = state.reply_policy or self.default_policy
        if state.character != known.stored_character:
            known.character = known.stored_character = state.character
            known.avatar_url = None  # the picture was the previous character's
        return known

    async def bind(
        self, key: SessionKey, *, character: str | None, policy: ReplyPolicy | None = None
    ) -> Binding:
        """Bind (or rebind) a channel: open (or reopen) its session with ``character`` and
        store ``policy`` as the session's reply policy."""
        async with self.lock(key):
            info = await self.service.open_session(key, character=character)
            if policy is not None:
                info = await self.service.set_session_option(key, "reply_policy", policy)
            return self._remember(info)

    async def unbind(self, key: SessionKey) -> None:
        """Stop answering in a channel: the service closes the session (its data stays)."""
        async with self.lock(key):
            await self.service.close_session(key)
            self._bound.pop(key, None)

    def forget(self, key: SessionKey) -> None:
        """Drop cached knowledge of a session (after a reset or an import changed it)."""
        self._bound.pop(key, None)

    async def ensure_branch(self, place: Place, binding: Binding) -> None:
        """Make sure a thread's branch exists, forking it the first time it is used."""
        if place.branch in binding.branches:
            return
        async with self.lock(place.key):
            if place.branch in binding.branches:
                return
            info = await self.service.session_info(place.key)
            binding.branches = {b.name for b in info.branches}
            if place.branch in binding.branches:
                return
            source, after = MAIN_BRANCH, None
            if place.thread_id is not None:
                # A thread opened on a message has that message's id.
                ref = await self.service.resolve_message(place.key, str(place.thread_id))
                if ref is not None and ref.role == "assistant":
                    source, after = ref.branch, ref.floor
            created = await self.service.fork(
                place.key, source, after_floor=after, name=place.branch
            )
            binding.branches.add(created.name)
            _log.info("branch %s forked from %s after floor %s", created.name, source, after)
