"""Payload builders for the fake Bot API: users, chats, messages and updates on the wire.

Each builder returns the plain JSON dict the Bot API would put on the wire; the contract tests
check that aiogram parses every one of them.
"""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]


def user(
    user_id: int, first_name: str, *, is_bot: bool = False, username: str | None = None
) -> Json:
    """A ``User`` object."""
    data: Json = {"id": user_id, "is_bot": is_bot, "first_name": first_name}
    if username:
        data["username"] = username
    return data


def chat(chat_id: int, kind: str, *, title: str | None = None, forum: bool = False) -> Json:
    """A ``Chat`` object (``kind``: private, group, supergroup)."""
    data: Json = {"id": chat_id, "type": kind}
    if title:
        data["title"] = title
    if forum:
        data["is_forum"] = True
    return data


def message(
    *,
    message_id: int,
    date: int,
    chat_obj: Json,
    sender: Json,
    text: str | None = None,
    thread_id: int | None = None,
    reply_to: Json | None = None,
    document: Json | None = None,
    caption: str | None = None,
    extra: Json | None = None,
) -> Json:
    """A ``Message``; a command text gets its ``bot_command`` entity like Telegram adds it.

    A message in a forum topic carries both ``message_thread_id`` and ``is_topic_message``:
    aiogram's ``Message.answer`` copies the thread only when the flag is set.
    """
    data: Json = {"message_id": message_id, "date": date, "chat": chat_obj, "from": sender}
    if text is not None:
        data["text"] = text
        if text.startswith("/"):
            command = text.split()[0]
            data["entities"] = [
                {
                    "type": "bot_command",
                    "offset": 0,
                    "length": len(command.encode("utf-16-le")) // 2,
                }
            ]
    if thread_id is not None:
        data["message_thread_id"] = thread_id
        data["is_topic_message"] = True
    if reply_to is not None:
        data["reply_to_message"] = reply_to
    if document is not None:
        data["document"] = document
    if caption is not None:
        data["caption"] = caption
    if extra:
        data.update(extra)
    return data


def document(file_id: str, filename: str, mime_type: str, size: int) -> Json:
    """A ``Document`` attached to a message."""
    return {
        "file_id": file_id,
        "file_unique_id": f"u{file_id}",
        "file_name": filename,
        "mime_type": mime_type,
        "file_size": size,
    }


def callback_query(
    query_id: str, sender: Json, message_obj: Json, data: str, *, chat_instance: str = "ci"
) -> Json:
    """A ``CallbackQuery`` pressed on ``message_obj`` (a message the bot sent)."""
    return {
        "id": query_id,
        "from": sender,
        "message": message_obj,
        "chat_instance": chat_instance,
        "data": data,
    }


def reaction_update(
    *,
    chat_obj: Json,
    message_id: int,
    sender: Json,
    date: int,
    new: tuple[str, ...],
    old: tuple[str, ...] = (),
) -> Json:
    """A ``MessageReactionUpdated`` with emoji reactions."""
    return {
        "chat": chat_obj,
        "message_id": message_id,
        "user": sender,
        "date": date,
        "old_reaction": [{"type": "emoji", "emoji": e} for e in old],
        "new_reaction": [{"type": "emoji", "emoji": e} for e in new],
    }


def chat_member(member: Json, status: str) -> Json:
    """A ``ChatMember`` of the given status (creator, administrator, member, left)."""
    if status == "creator":
        return {"status": "creator", "user": member, "is_anonymous": False}
    if status == "administrator":
        flags = [
            "can_manage_chat",
            "can_delete_messages",
            "can_manage_video_chats",
            "can_restrict_members",
            "can_promote_members",
            "can_change_info",
            "can_invite_users",
            "can_post_stories",
            "can_edit_stories",
            "can_delete_stories",
            "can_send_welcome_messages",
        ]
        data: Json = {"status": "administrator", "user": member, "can_be_edited": False}
        data["is_anonymous"] = False
        data.update(dict.fromkeys(flags, True))
        return data
    if status == "member":
        return {"status": "member", "user": member}
    return {"status": "left", "user": member}
