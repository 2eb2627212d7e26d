"""The routers of the Telegram front end, built per runner (a Router joins one Dispatcher)."""

from __future__ import annotations

from aiogram import Router

from adapters.telegram.app import Frontend
from adapters.telegram.routers import (
    asset_commands,
    callbacks,
    commands,
    documents,
    group_commands,
    messages,
    reactions,
    session_commands,
)


def build_routers(frontend: Frontend) -> list[Router]:
    """Commands first (``/set`` among them), then buttons, reactions, documents and plain
    messages."""
    return [
        commands.build(frontend),
        asset_commands.build(frontend),
        session_commands.build(frontend),
        group_commands.build(frontend),
        callbacks.build(frontend),
        reactions.build(frontend),
        documents.build(frontend),
        messages.build(frontend),
    ]
