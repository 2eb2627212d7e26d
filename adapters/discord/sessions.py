"""Which channels are bound to a session, and which threads are branches of it.

A channel is bound when its session exists in the service (``/tavern start``, the config, or an
earlier run) and was not stopped (here, or for good when the service marks sessions closed).
Answers are cached so that an unbound channel costs one service call, not one per message. A
thread becomes its branch on first use: a thread opened on a bot reply forks after that reply's
floor, any other thread forks after the latest floor.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from adapters.discord.convert import Place
from adapters.discord.options import ReplyPolicy
from engine.errors import NotFoundError
from engine.turns.api import MAIN_BRANCH, RoleplayService, SessionInfo, SessionKey

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


class Sessions:
    """Bound channels and their branches (see the module docstring)."""

    def __init__(self, service: RoleplayService, *, default_policy: ReplyPolicy) -> None:
        self.service = service
        self.default_policy = default_policy
        self._bound: dict[SessionKey, Binding | None] = {}
        self._stopped: set[SessionKey] = set()
        self._policies: dict[SessionKey, ReplyPolicy] = {}
        self._locks: dict[SessionKey, asyncio.Lock] = {}

    def lock(self, key: SessionKey) -> asyncio.Lock:
        """The session's lock (forks and binding changes are serialised per session)."""
        return self._locks.setdefault(key, asyncio.Lock())

    def _remember(self, info: SessionInfo) -> Binding:
        if len(self._bound) > MAX_CACHED_SESSIONS:
            self._bound.clear()
        # A service that stores the reply policy has the last word (it survives restarts).
        stored: ReplyPolicy | None = getattr(info, "reply_policy", None)
        binding = Binding(
            key=info.key,
            character=info.character,
            policy=stored or self._policies.get(info.key, self.default_policy),
            branches={b.name for b in info.branches},
        )
        self._bound[info.key] = binding
        return binding

    def is_bound(self, key: SessionKey) -> bool:
        """Whether ``key`` is known to be bound (from the cache only: no service call)."""
        return key not in self._stopped and self._bound.get(key) is not None

    async def binding(self, key: SessionKey) -> Binding | None:
        """The binding of a session key, or None when the channel is not bound."""
        if key in self._stopped:
            return None
        if key in self._bound:
            return self._bound[key]
        try:
            info = await self.service.session_info(key)
        except NotFoundError:
            self._bound[key] = None
            return None
        if getattr(info, "closed", False):
            # Stopped with /tavern stop (in this run or an earlier one): the data stays.
            self._bound[key] = None
            return None
        return self._remember(info)

    async def bind(
        self, key: SessionKey, *, character: str | None, policy: ReplyPolicy | None = None
    ) -> Binding:
        """Bind (or rebind) a channel: open its session with ``character``."""
        async with self.lock(key):
            self._stopped.discard(key)
            if policy is not None:
                self._policies[key] = policy
            info = await self.service.open_session(key, character=character)
            setter = getattr(self.service, "set_session_option", None)
            if policy is not None and setter is not None:
                info = await setter(key, "reply_policy", policy)
            return self._remember(info)

    def unbind(self, key: SessionKey) -> None:
        """Stop answering in a channel; the session and its data stay in the service."""
        self._stopped.add(key)
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
