"""Collecting the messages that become one floor.

A floor holds the user messages collected before its reply. While a chat's turn is generating,
its next text messages wait in one open batch; the turn after it takes the whole batch as one
floor. A command, button or reaction in between closes the open batch, so what comes after it
starts a new floor and nothing is answered out of order. Messages are collected when their
update arrives (before waiting for the chat), and taken by the first handler to run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiogram.types import Message

MAX_BATCH = 20
"""At most this many messages become one floor; the next ones start another batch."""


@dataclass
class _Batch:
    messages: list[Message] = field(default_factory=list)
    sealed: bool = False


class Inbox:
    """Open and waiting batches per chat and forum thread (see the module docstring)."""

    def __init__(self) -> None:
        self._batches: dict[tuple[int, int | None], list[_Batch]] = {}
        self._where: dict[tuple[int, int], _Batch] = {}

    @staticmethod
    def _key(message: Message) -> tuple[int, int | None]:
        return message.chat.id, message.message_thread_id if message.is_topic_message else None

    def collect(self, message: Message) -> None:
        """Add a text message to the chat's open batch (opening one if needed)."""
        queue = self._batches.setdefault(self._key(message), [])
        if not queue or queue[-1].sealed or len(queue[-1].messages) >= MAX_BATCH:
            queue.append(_Batch())
        queue[-1].messages.append(message)
        self._where[(message.chat.id, message.message_id)] = queue[-1]

    def seal(self, chat_id: int) -> None:
        """Close every open batch of the chat (something else happened in between)."""
        for (chat, _), queue in self._batches.items():
            if chat == chat_id and queue:
                queue[-1].sealed = True

    def take(self, message: Message) -> list[Message]:
        """The batch holding ``message``, removed; empty if another handler took it already."""
        batch = self._where.pop((message.chat.id, message.message_id), None)
        if batch is None:
            return []
        batch.sealed = True
        key = self._key(message)
        queue = self._batches.get(key, [])
        if batch in queue:
            queue.remove(batch)
        if not queue:
            self._batches.pop(key, None)
        for other in batch.messages:
            self._where.pop((other.chat.id, other.message_id), None)
        return batch.messages
