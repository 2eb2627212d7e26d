"""The Bot API methods the fake answers, over a small world model of chats and messages.

Each method takes the decoded parameters and returns the ``result`` value, or raises
:class:`ApiError` with Telegram's status and description. The rules that catch real bot bugs are
kept: HTML must parse, text is limited to 4096 UTF-16 units, an edit without a change is refused
with "message is not modified", an edit without ``reply_markup`` removes the keyboard, drafts
exist only in private chats, and a callback query can be answered once.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.telegram import builders
from tests.fakes.telegram.html_check import (
    MAX_TEXT_UTF16,
    HtmlParseError,
    utf16_len,
    visible_text,
)

Json = dict[str, Any]
COMMAND_NAME = re.compile(r"^[a-z0-9_]{1,32}$")


class ApiError(Exception):
    """An error answer: HTTP status, description and optional ``retry_after``."""

    def __init__(self, status: int, description: str, *, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.retry_after = retry_after


def bad_request(problem: str) -> ApiError:
    return ApiError(400, f"Bad Request: {problem}")


@dataclass
class FakeMessage:
    """A message in the fake world (sent by a user or by the bot), with its current state."""

    chat_id: int
    message_id: int
    sender_id: int
    text: str | None = None
    html: str | None = None
    parse_mode: str | None = None
    reply_markup: Json | None = None
    thread_id: int | None = None
    reply_to: int | None = None
    document: Json | None = None
    caption: str | None = None
    deleted: bool = False
    edits: int = 0
    payload: Json = field(default_factory=dict)


@dataclass
class FakeChat:
    """A chat and the status of each member (creator, administrator, member)."""

    data: Json
    members: dict[int, str] = field(default_factory=dict)
    users: dict[int, Json] = field(default_factory=dict)
    next_message_id: int = 1
    next_thread_id: int = 100


class World:
    """Chats, messages, files, commands and drafts known to the fake, and the method table."""

    def __init__(self, bot_user: Json) -> None:
        self.bot_user = bot_user
        self.chats: dict[int, FakeChat] = {}
        self.messages: dict[tuple[int, int], FakeMessage] = {}
        self.files: dict[str, tuple[str, bytes]] = {}
        self.file_paths: dict[str, bytes] = {}
        self.commands: dict[tuple[str, int | None, str], list[Json]] = {}
        self.drafts: dict[int, list[str]] = {}
        self.reactions: list[Json] = []
        self.callbacks: dict[str, bool] = {}
        self.uploads: list[Json] = []
        self.webhook: Json = {}

    # ----------------------------------------------------------------- helpers
    def chat(self, chat_id: Any) -> FakeChat:
        try:
            return self.chats[int(chat_id)]
        except (KeyError, TypeError, ValueError):
            raise bad_request("chat not found") from None

    def new_message_id(self, chat_id: int) -> int:
        chat = self.chat(chat_id)
        chat.next_message_id += 1
        return chat.next_message_id - 1

    def message(self, chat_id: Any, message_id: Any, *, action: str) -> FakeMessage:
        found = self.messages.get((int(chat_id), int(message_id)))
        if found is None or found.deleted:
            raise bad_request(f"message to {action} not found")
        return found

    @staticmethod
    def check_text(text: Any, parse_mode: Any, *, limit: int = MAX_TEXT_UTF16) -> str:
        if not isinstance(text, str) or not text.strip():
            raise bad_request("message text is empty")
        plain = text
        if isinstance(parse_mode, str) and parse_mode.upper() == "HTML":
            try:
                plain = visible_text(text)
            except HtmlParseError as exc:
                raise bad_request(f"can't parse entities: {exc}") from None
        if not plain.strip():
            raise bad_request("message text is empty")
        if utf16_len(plain) > limit:
            raise bad_request("message is too long")
        return plain

    def bot_message_payload(self, msg: FakeMessage) -> Json:
        chat = self.chat(msg.chat_id)
        extra: Json = {}
        if msg.reply_markup:
            extra["reply_markup"] = msg.reply_markup
        if msg.edits:
            extra["edit_date"] = int(time.time())
        payload = builders.message(
            message_id=msg.message_id,
            date=int(time.time()),
            chat_obj=chat.data,
            sender=self.bot_user,
            text=msg.text,
            thread_id=msg.thread_id,
            document=msg.document,
            caption=msg.caption,
            extra=extra,
        )
        payload.pop("entities", None)
        msg.payload = payload
        return payload

    def _thread(self, chat: FakeChat, params: Json) -> int | None:
        thread = params.get("message_thread_id")
        if thread is None:
            return None
        if not chat.data.get("is_forum"):
            raise bad_request("message thread not found")
        return int(thread)

    def _reply_to(self, chat_id: int, params: Json) -> int | None:
        reply = params.get("reply_parameters")
        if not reply:
            return None
        target = int(reply["message_id"])
        if (chat_id, target) not in self.messages and not reply.get("allow_sending_without_reply"):
            raise bad_request("message to be replied not found")
        return target

    # ----------------------------------------------------------------- methods
    def getMe(self, params: Json) -> Json:  # noqa: N802 - Bot API names
        return {**self.bot_user, "can_join_groups": True, "supports_inline_queries": False}

    def sendMessage(self, params: Json) -> Json:  # noqa: N802
        chat = self.chat(params.get("chat_id"))
        chat_id = int(chat.data["id"])
        plain = self.check_text(params.get("text"), params.get("parse_mode"))
        msg = FakeMessage(
            chat_id=chat_id,
            message_id=self.new_message_id(chat_id),
            sender_id=int(self.bot_user["id"]),
            text=plain,
            html=params["text"],
            parse_mode=params.get("parse_mode"),
            reply_markup=params.get("reply_markup"),
            thread_id=self._thread(chat, params),
            reply_to=self._reply_to(chat_id, params),
        )
        self.messages[(chat_id, msg.message_id)] = msg
        return self.bot_message_payload(msg)

    def sendMessageDraft(self, params: Json) -> bool:  # noqa: N802
        chat = self.chat(params.get("chat_id"))
        if chat.data["type"] != "private":
            raise bad_request("TEXTDRAFT_PEER_INVALID")
        if not int(params.get("draft_id") or 0):
            raise bad_request("draft_id must be non-zero")
        text = params.get("text") or ""
        if text:
            self.check_text(text, params.get("parse_mode"))
        self.drafts.setdefault(int(chat.data["id"]), []).append(text)
        return True

    def editMessageText(self, params: Json) -> Json:  # noqa: N802
        msg = self.message(params.get("chat_id"), params.get("message_id"), action="edit")
        plain = self.check_text(params.get("text"), params.get("parse_mode"))
        markup = params.get("reply_markup")
        if params["text"] == msg.html and markup == msg.reply_markup:
            raise bad_request(
                "message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message"
            )
        # Telegram drops the inline keyboard when an edit does not repeat it.
        msg.text, msg.html, msg.reply_markup = plain, params["text"], markup
        msg.parse_mode = params.get("parse_mode")
        msg.edits += 1
        return self.bot_message_payload(msg)

    def editMessageReplyMarkup(self, params: Json) -> Json:  # noqa: N802
        msg = self.message(params.get("chat_id"), params.get("message_id"), action="edit")
        markup = params.get("reply_markup")
        if markup == msg.reply_markup or (not markup and not msg.reply_markup):
            raise bad_request(
                "message is not modified: specified new message content and reply markup are "
                "exactly the same as a current content and reply markup of the message"
            )
        msg.reply_markup = markup or None
        msg.edits += 1
        return self.bot_message_payload(msg)

    def deleteMessage(self, params: Json) -> bool:  # noqa: N802
        msg = self.message(params.get("chat_id"), params.get("message_id"), action="delete")
        msg.deleted = True
        return True

    def sendChatAction(self, params: Json) -> bool:  # noqa: N802
        self.chat(params.get("chat_id"))
        if params.get("action") not in {"typing", "upload_document", "choose_sticker"}:
            raise bad_request("wrong parameter action in request")
        return True

    def answerCallbackQuery(self, params: Json) -> bool:  # noqa: N802
        query = str(params.get("callback_query_id"))
        if self.callbacks.get(query, True):
            raise bad_request(
                "query is too old and response timeout expired or query ID is invalid"
            )
        self.callbacks[query] = True
        return True

    def setMessageReaction(self, params: Json) -> bool:  # noqa: N802
        self.message(params.get("chat_id"), params.get("message_id"), action="react")
        self.reactions.append(params)
        return True

    def setMyCommands(self, params: Json) -> bool:  # noqa: N802
        commands = params.get("commands") or []
        for command in commands:
            if not COMMAND_NAME.match(str(command.get("command", ""))):
                raise bad_request("BOT_COMMAND_INVALID")
            if not 1 <= len(str(command.get("description", ""))) <= 256:
                raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
        scope = params.get("scope") or {"type": "default"}
        key = (str(scope["type"]), scope.get("chat_id"), str(params.get("language_code") or ""))
        self.commands[key] = commands
        return True

    def deleteWebhook(self, params: Json) -> bool:  # noqa: N802
        self.webhook = {}
        return True

    def setWebhook(self, params: Json) -> bool:  # noqa: N802
        url = str(params.get("url") or "")
        if not url.startswith(("http://127.0.0.1", "https://")):
            raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")
        self.webhook = {
            "url": url,
            "secret_token": params.get("secret_token"),
            "allowed_updates": params.get("allowed_updates"),
        }
        return True

    def getWebhookInfo(self, params: Json) -> Json:  # noqa: N802
        return {
            "url": self.webhook.get("url", ""),
            "has_custom_certificate": False,
            "pending_update_count": 0,
        }

    def getChatMember(self, params: Json) -> Json:  # noqa: N802
        chat = self.chat(params.get("chat_id"))
        user_id = int(params["user_id"])
        member = chat.users.get(user_id) or builders.user(user_id, f"user{user_id}")
        status = chat.members.get(user_id, "left")
        if chat.data["type"] == "private" and user_id == chat.data["id"]:
            status = "member"
        return builders.chat_member(member, status)

    def getChatAdministrators(self, params: Json) -> list[Json]:  # noqa: N802
        chat = self.chat(params.get("chat_id"))
        if chat.data["type"] == "private":
            raise bad_request("there are no administrators in the private chat")
        return [
            builders.chat_member(chat.users[uid], status)
            for uid, status in chat.members.items()
            if status in {"creator", "administrator"}
        ]

    def getFile(self, params: Json) -> Json:  # noqa: N802
        file_id = str(params.get("file_id"))
        if file_id not in self.files:
            raise bad_request("invalid file_id")
        path, data = self.files[file_id]
        return {
            "file_id": file_id,
            "file_unique_id": f"u{file_id}",
            "file_size": len(data),
            "file_path": path,
        }

    def sendDocument(self, params: Json) -> Json:  # noqa: N802
        chat = self.chat(params.get("chat_id"))
        chat_id = int(chat.data["id"])
        upload = params.get("document")
        if not isinstance(upload, tuple):
            raise bad_request("there is no document in the request")
        filename, data = upload
        caption = params.get("caption")
        if caption:
            self.check_text(caption, params.get("parse_mode"), limit=1024)
        file_id = f"doc{len(self.files) + 1}"
        path = f"documents/{file_id}_{filename}"
        self.files[file_id] = (path, data)
        self.file_paths[path] = data
        msg = FakeMessage(
            chat_id=chat_id,
            message_id=self.new_message_id(chat_id),
            sender_id=int(self.bot_user["id"]),
            document=builders.document(file_id, filename, "application/octet-stream", len(data)),
            caption=caption,
            thread_id=self._thread(chat, params),
            reply_markup=params.get("reply_markup"),
        )
        self.messages[(chat_id, msg.message_id)] = msg
        self.uploads.append(
            {"chat_id": chat_id, "filename": filename, "data": data, "caption": caption}
        )
        return self.bot_message_payload(msg)

    def close(self, params: Json) -> bool:
        return True
