"""The pieces every router needs, built once per runner: service, memory, resolver, turns."""

from __future__ import annotations

from dataclasses import dataclass

from aiogram import Bot
from aiogram.types import Chat

from adapters.telegram.config import TelegramConfig
from adapters.telegram.context import Resolver, is_admin
from adapters.telegram.state import ChatState
from adapters.telegram.turns import Turns
from engine.turns.api import RoleplayService


@dataclass(frozen=True, slots=True)
class Frontend:
    """Shared by the routers of one Telegram runner."""

    service: RoleplayService
    config: TelegramConfig
    state: ChatState
    resolver: Resolver
    turns: Turns

    @classmethod
    def build(
        cls, service: RoleplayService, config: TelegramConfig, state: ChatState | None = None
    ) -> Frontend:
        state = state or ChatState(service)
        return cls(
            service=service,
            config=config,
            state=state,
            resolver=Resolver(service, state),
            turns=Turns(service, state, config),
        )

    async def may_write(self, bot: Bot, chat: Chat, user_id: int | None) -> bool:
        """Whether this user may change the chat's session (admins in groups)."""
        return user_id is not None and await is_admin(bot, self.state, chat, user_id)
