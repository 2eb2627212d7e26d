"""aiogram objects to engine values, at the edge: session keys, branches, speakers, lines.

A Telegram chat is its own realm and session (``SessionKey("telegram", chat id, chat id)``). In a
forum supergroup each topic is a branch named by its thread id; the General topic and every
other chat use the main branch (private chats may switch branches, see ``state``).
"""

from __future__ import annotations

from aiogram.types import Chat, Message, User

from engine.turns.api import MAIN_BRANCH, SessionKey, Speaker, UserLine

PLATFORM = "telegram"


def session_key(chat: Chat) -> SessionKey:
    """The session (and realm) of a chat."""
    return SessionKey(platform=PLATFORM, realm=str(chat.id), key=str(chat.id))


def topic_branch(message: Message) -> str | None:
    """The branch of a forum topic message, or None outside topics (General is main)."""
    if message.chat.is_forum and message.is_topic_message and message.message_thread_id:
        return str(message.message_thread_id)
    return None


def thread_of_branch(branch: str) -> int | None:
    """The forum thread id a topic branch lives in, or None for other branches."""
    return int(branch) if branch.isdigit() else None


def speaker(user: User) -> Speaker:
    """The human behind a message, as ``{{user}}``."""
    return Speaker(id=str(user.id), name=user.full_name or str(user.id))


def user_line(message: Message) -> UserLine | None:
    """The role-play input a message carries, or None (no text, or no author)."""
    text = message.text or message.caption
    if not text or message.from_user is None:
        return None
    return UserLine(speaker=speaker(message.from_user), text=text, ref=str(message.message_id))


def is_private(chat: Chat) -> bool:
    """Whether the chat is a one-to-one chat with the bot."""
    return chat.type == "private"


def main_branch() -> str:
    """The name of every session's first branch."""
    return MAIN_BRANCH
