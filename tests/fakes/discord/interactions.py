"""Interactions in the fake: building INTERACTION_CREATE payloads and taking the bot's answers.

Slash-command options are typed from the commands the bot synced (the fake refuses to invoke a
command that was never synced, like Discord). The bot's callback, edits of ``@original`` and
follow-ups are kept per interaction in an :class:`InteractionRecord`; a second callback answers
40060 "already acknowledged".
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.fakes.discord.rest import (
    ALREADY_ACKNOWLEDGED,
    UNKNOWN_INTERACTION,
    Result,
    error,
)
from tests.fakes.discord.world import Channel, Guild, User, message_payload

if TYPE_CHECKING:
    from tests.fakes.discord.server import FakeDiscord, Request

EPHEMERAL = 1 << 6
ATTACHMENT_LIMIT = 25 * 1024 * 1024
SUB_COMMAND, SUB_COMMAND_GROUP, ATTACHMENT_OPTION = 1, 2, 11


class CommandNotSynced(LookupError):
    """The test invoked a command the bot never registered."""


@dataclass
class InteractionRecord:
    """What the bot answered to one interaction."""

    id: int
    token: str
    kind: int
    callback_type: int | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)  # original first, then follow-ups
    choices: list[dict[str, Any]] | None = None
    files: list[tuple[str, bytes]] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def text(self) -> str:
        """The content of the latest answer (original edited, or the last follow-up)."""
        return self.messages[-1].get("content") or "" if self.messages else ""

    @property
    def ephemeral(self) -> bool:
        """True when every answer was ephemeral."""
        return bool(self.messages) and all(m["flags"] & EPHEMERAL for m in self.messages)


class Interactions:
    """Interaction state of one :class:`FakeDiscord`."""

    def __init__(self, server: FakeDiscord) -> None:
        self.s = server
        self.records: dict[int, InteractionRecord] = {}
        self.by_token: dict[str, InteractionRecord] = {}

    # ------------------------------------------------------------------ building
    def find_command(self, guild: Guild | None, name: str, kind: int = 1) -> dict[str, Any]:
        """The synced definition of command ``name`` (guild commands first)."""
        scopes = ([guild.id] if guild else []) + [None]
        for scope in scopes:
            for command in self.s.commands.get(scope, []):
                if command["name"] == name and command.get("type", 1) == kind:
                    return command
        raise CommandNotSynced(f"command {name!r} (type {kind}) was never synced")

    def build_options(
        self,
        definition: dict[str, Any],
        path: list[str],
        values: dict[str, Any],
        focused: str | None,
        resolved: dict[str, Any],
    ) -> list[dict[str, Any]]:
        """Nest ``values`` under the sub-command ``path``, typed from ``definition``."""
        if path:
            head, rest = path[0], path[1:]
            for option in definition.get("options", []):
                if option["name"] == head and option["type"] in (SUB_COMMAND, SUB_COMMAND_GROUP):
                    inner = self.build_options(option, rest, values, focused, resolved)
                    return [{"type": option["type"], "name": head, "options": inner}]
            raise CommandNotSynced(f"no sub-command {head!r} in {definition['name']!r}")
        built = []
        declared = {o["name"]: o for o in definition.get("options", [])}
        for name, value in values.items():
            if name not in declared:
                raise CommandNotSynced(f"no option {name!r} in {definition['name']!r}")
            kind = declared[name]["type"]
            option: dict[str, Any] = {"type": kind, "name": name, "value": value}
            if kind == ATTACHMENT_OPTION:
                filename, data = value
                attachment = self.s.store_files([(filename, data)])[0]
                resolved.setdefault("attachments", {})[attachment["id"]] = attachment
                option["value"] = attachment["id"]
            if name == focused:
                option["focused"] = True
            built.append(option)
        return built

    def payload(
        self,
        *,
        kind: int,
        channel: Channel,
        user: User,
        data: dict[str, Any],
    ) -> tuple[InteractionRecord, dict[str, Any]]:
        """An INTERACTION_CREATE payload from ``user`` in ``channel``."""
        record = InteractionRecord(
            id=self.s.ids.next(), token=secrets.token_urlsafe(24), kind=kind
        )
        self.records[record.id] = record
        self.by_token[record.token] = record
        guild = self.s.guild_of(channel)
        body: dict[str, Any] = {
            "id": str(record.id),
            "application_id": str(self.s.app_id),
            "type": kind,
            "data": data,
            "token": record.token,
            "version": 1,
            "channel_id": str(channel.id),
            "channel": channel.payload(),
            "locale": "en-US",
            "attachment_size_limit": ATTACHMENT_LIMIT,
            "app_permissions": str(guild.permissions_of(self.s.bot.id) if guild else 0),
            "entitlements": [],
            "authorizing_integration_owners": {},
            "context": 0 if guild else 1,
        }
        if guild is not None:
            body["guild_id"] = str(guild.id)
            body["guild_locale"] = "en-US"
            member = guild.member_payload(user.id)
            member["permissions"] = str(guild.permissions_of(user.id))
            body["member"] = member
        else:
            body["user"] = user.payload()
        return record, body

    # ------------------------------------------------------------------ answers
    def _message(self, record: InteractionRecord, body: dict[str, Any], channel_id: str) -> dict:
        channel = Channel(id=int(channel_id), type=0, name="", guild_id=None)
        data = message_payload(
            message_id=self.s.ids.next(),
            channel=channel,
            author=self.s.bot,
            content=body.get("content") or "",
            guild=None,
            flags=int(body.get("flags") or 0),
        )
        data["interaction_id"] = str(record.id)
        return data

    async def callback(self, req: Request, interaction_id: int, token: str) -> Result:
        """POST /interactions/{id}/{token}/callback."""
        record = self.records.get(interaction_id)
        if record is None or record.token != token:
            return error(404, UNKNOWN_INTERACTION, "Unknown interaction")
        if record.callback_type is not None:
            return error(400, ALREADY_ACKNOWLEDGED, "Interaction has already been acknowledged.")
        body = req.body or {}
        record.callback_type = int(body.get("type", 0))
        inner = body.get("data") or {}
        answer: dict[str, Any] = {
            "interaction": {
                "id": str(record.id),
                "type": record.kind,
                "response_message_loading": record.callback_type == 5,
                "response_message_ephemeral": bool(int(inner.get("flags") or 0) & EPHEMERAL),
            }
        }
        record.files.extend(req.files)
        if record.callback_type == 8:
            record.choices = list(inner.get("choices", []))
            record.done.set()
        elif record.callback_type == 4:
            message = self._message(record, inner, "0")
            record.messages.append(message)
            answer["interaction"]["response_message_id"] = message["id"]
            answer["resource"] = {"type": 4, "message": message}
            record.done.set()
        elif record.callback_type == 5:
            message = self._message(record, {**inner, "content": ""}, "0")
            record.messages.append(message)
            answer["interaction"]["response_message_id"] = message["id"]
        else:
            record.done.set()
        self.s.notify()
        return 200, answer

    async def edit(self, req: Request, token: str, message: str) -> Result:
        """PATCH /webhooks/{app}/{token}/messages/@original (or a follow-up's id)."""
        record = self.by_token.get(token)
        if record is None or not record.messages:
            return error(404, UNKNOWN_INTERACTION, "Unknown interaction")
        target = record.messages[0]
        if message != "@original":
            target = next((m for m in record.messages if m["id"] == message), target)
        body = req.body or {}
        if "content" in body:
            target["content"] = body["content"] or ""
        record.files.extend(req.files)
        record.done.set()
        self.s.notify()
        return 200, target

    async def followup(self, req: Request, token: str) -> Result:
        """POST /webhooks/{app}/{token}: a follow-up message."""
        record = self.by_token.get(token)
        if record is None or record.callback_type is None:
            return error(404, UNKNOWN_INTERACTION, "Unknown interaction")
        message = self._message(record, req.body or {}, "0")
        record.messages.append(message)
        record.files.extend(req.files)
        record.done.set()
        self.s.notify()
        return 200, message
