"""Where an update plays: its session, branch and reply place, and who may change things.

Private chats open their session on first use and play on their current branch. Groups play
only once an admin has bound them with ``/start``; in forum supergroups each topic is a branch,
forked from the main branch the first time the topic is seen (the General topic is main).
"""

from __future__ import annotations

from dataclasses import dataclass

from aiogram import Bot
from aiogram.exceptions import TelegramAPIError
from aiogram.types import Chat, Message

from adapters.telegram.convert import is_private, session_key, topic_branch
from adapters.telegram.sender import Place
from adapters.telegram.state import ChatState
from engine.errors import NotFoundError
from engine.turns.api import MAIN_BRANCH, RoleplayService, SessionInfo, SessionKey

ADMIN_STATUSES = frozenset({"creator", "administrator"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Where:
    """An update's session, branch and the place replies go."""

    key: SessionKey
    branch: str
    place: Place
    private: bool
    info: SessionInfo | None


class Resolver:
    """Turns chats and messages into :class:`Where`, creating topic branches as needed."""

    def __init__(self, service: RoleplayService, state: ChatState) -> None:
        self.service = service
        self.state = state
        self._known_branches: set[tuple[SessionKey, str]] = set()
        self._opened: dict[SessionKey, SessionInfo] = {}

    async def session(self, chat: Chat, *, fresh: bool = False) -> SessionInfo | None:
        """The chat's session: opened for private chats, None for a group not bound yet.

        A private chat is opened once per process; later messages get that first answer
        (its branch list may be old) unless ``fresh`` asks the service again."""
        key = session_key(chat)
        if is_private(chat):
            known = self._opened.get(key)
            if known is not None and not fresh:
                return known
            info = self._opened[key] = await self.service.open_session(key)
            self.state.note_group(info)
            return info
        try:
            found = await self.service.session_info(key)
        except NotFoundError:
            return None
        self.state.note_group(found)
        return found

    async def ensure_branch(self, key: SessionKey, branch: str, info: SessionInfo) -> None:
        """Fork a topic's branch from main (after its latest floor) the first time it is seen."""
        if branch == MAIN_BRANCH or (key, branch) in self._known_branches:
            return
        if branch not in {b.name for b in info.branches}:
            await self.service.fork(key, MAIN_BRANCH, after_floor=None, name=branch)
        self._known_branches.add((key, branch))

    def forget(self, key: SessionKey) -> None:
        """Forget which topic branches exist (after ``/reset`` they are created again)."""
        self._known_branches = {known for known in self._known_branches if known[0] != key}

    async def where(self, message: Message, *, reply: bool = True) -> Where:
        """Resolve a message (it must be in a private chat or a bound group to play)."""
        chat = message.chat
        key = session_key(chat)
        info = await self.session(chat)
        private = is_private(chat)
        thread = message.message_thread_id if message.is_topic_message else None
        if private:
            branch = await self.state.current_branch(key)
        else:
            branch = topic_branch(message) or MAIN_BRANCH
            if info is not None:
                await self.ensure_branch(key, branch, info)
        place = Place(
            chat_id=chat.id,
            thread_id=thread,
            private=private,
            reply_to=message.message_id if reply and not private else None,
        )
        return Where(key=key, branch=branch, place=place, private=private, info=info)


async def is_admin(bot: Bot, state: ChatState, chat: Chat, user_id: int) -> bool:
    """Whether the user may change the chat's session (always, in a private chat)."""
    if is_private(chat):
        return True
    cached = state.cached_admin(chat.id, user_id)
    if cached is not None:
        return cached
    try:
        member = await bot.get_chat_member(chat.id, user_id)
    except TelegramAPIError:
        return False
    allowed = member.status in ADMIN_STATUSES
    state.remember_admin(chat.id, user_id, allowed)
    return allowed
