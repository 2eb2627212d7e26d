"""The test side of the fake Bot API: people, chats and what they do (the updates they cause).

Mixed into :class:`tests.fakes.telegram.server.FakeTelegramServer`; every action records the
user's message in the world (so the bot can reply to it) and queues the update Telegram would
send: text and command messages, documents, forum topics, button presses and reactions.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from tests.fakes.telegram import builders
from tests.fakes.telegram.methods import FakeChat, FakeMessage, World

Json = dict[str, Any]


class Scenes:
    """People and chats acting on the fake (see the module docstring)."""

    world: World
    _user_ids: itertools.count[int]
    _group_ids: itertools.count[int]
    _query_ids: itertools.count[int]

    async def push_update(self, kind: str, payload: Json) -> Json:
        raise NotImplementedError

    def new_user(self, first_name: str, *, user_id: int | None = None) -> Json:
        return builders.user(user_id or next(self._user_ids), first_name)

    def private_chat(self, member: Json) -> Json:
        data = builders.chat(int(member["id"]), "private")
        data["first_name"] = member["first_name"]
        chat = self.world.chats.setdefault(int(member["id"]), FakeChat(data))
        chat.users[int(member["id"])] = member
        chat.members[int(member["id"])] = "member"
        return chat.data

    def group(
        self,
        title: str,
        *,
        owner: Json,
        admins: tuple[Json, ...] = (),
        members: tuple[Json, ...] = (),
        forum: bool = False,
    ) -> Json:
        chat_id = -1_000_000_000_000 - next(self._group_ids)
        chat = FakeChat(builders.chat(chat_id, "supergroup", title=title, forum=forum))
        for person, status in (
            [(owner, "creator")]
            + [(a, "administrator") for a in admins]
            + [(m, "member") for m in members]
        ):
            chat.users[int(person["id"])] = person
            chat.members[int(person["id"])] = status
        chat.users[int(self.world.bot_user["id"])] = self.world.bot_user
        chat.members[int(self.world.bot_user["id"])] = "administrator"
        self.world.chats[chat_id] = chat
        return chat.data

    def _user_message(
        self,
        chat_obj: Json,
        sender: Json,
        *,
        thread_id: int | None,
        reply_to: int | None,
        **kw: Any,
    ) -> Json:
        chat_id = int(chat_obj["id"])
        reply_payload = None
        if reply_to is not None:
            target = self.world.messages[(chat_id, reply_to)]
            reply_payload = target.payload or self.world.bot_message_payload(target)
        message_id = self.world.new_message_id(chat_id)
        payload = builders.message(
            message_id=message_id,
            date=int(time.time()),
            chat_obj=chat_obj,
            sender=sender,
            thread_id=thread_id,
            reply_to=reply_payload,
            **kw,
        )
        self.world.messages[(chat_id, message_id)] = FakeMessage(
            chat_id=chat_id,
            message_id=message_id,
            sender_id=int(sender["id"]),
            text=kw.get("text"),
            thread_id=thread_id,
            reply_to=reply_to,
            document=kw.get("document"),
            payload=payload,
        )
        return payload

    async def send_text(
        self,
        chat_obj: Json,
        sender: Json,
        text: str,
        *,
        thread_id: int | None = None,
        reply_to: int | None = None,
    ) -> Json:
        """A user writes ``text`` (a ``/command`` gets its entity); returns the message."""
        payload = self._user_message(
            chat_obj, sender, thread_id=thread_id, reply_to=reply_to, text=text
        )
        await self.push_update("message", payload)
        return payload

    async def send_document(
        self,
        chat_obj: Json,
        sender: Json,
        *,
        filename: str,
        data: bytes,
        mime_type: str = "application/octet-stream",
        caption: str | None = None,
        thread_id: int | None = None,
    ) -> Json:
        """A user sends a file; the bot can fetch it with getFile and the download URL."""
        file_id = f"up{len(self.world.files) + 1}"
        path = f"documents/{file_id}_{filename}"
        self.world.files[file_id] = (path, data)
        self.world.file_paths[path] = data
        doc = builders.document(file_id, filename, mime_type, len(data))
        payload = self._user_message(
            chat_obj, sender, thread_id=thread_id, reply_to=None, document=doc, caption=caption
        )
        await self.push_update("message", payload)
        return payload

    async def create_topic(self, chat_obj: Json, sender: Json, name: str) -> int:
        """Create a forum topic (its service message is the topic's first message)."""
        chat = self.world.chat(chat_obj["id"])
        chat.next_thread_id += 1
        thread_id = chat.next_thread_id
        service = {"forum_topic_created": {"name": name, "icon_color": 7322096}}
        payload = self._user_message(
            chat_obj, sender, thread_id=thread_id, reply_to=None, extra=service
        )
        await self.push_update("message", payload)
        return thread_id

    async def press(self, chat_obj: Json, sender: Json, message_id: int, data: str) -> str:
        """Press an inline button with callback ``data`` on a bot message."""
        msg = self.world.message(chat_obj["id"], message_id, action="press")
        query_id = f"q{next(self._query_ids)}"
        self.world.callbacks[query_id] = False
        payload = builders.callback_query(
            query_id, sender, msg.payload or self.world.bot_message_payload(msg), data
        )
        await self.push_update("callback_query", payload)
        return query_id

    async def react(
        self,
        chat_obj: Json,
        sender: Json,
        message_id: int,
        emoji: str,
        *,
        old: tuple[str, ...] = (),
    ) -> Json:
        """A user sets a reaction (delivered only if the bot opted in to message_reaction)."""
        payload = builders.reaction_update(
            chat_obj=chat_obj,
            message_id=message_id,
            sender=sender,
            date=int(time.time()),
            new=(emoji,),
            old=old,
        )
        return await self.push_update("message_reaction", payload)
