"""Chat, state and time built-ins: last messages and swipes, ``lastGenerationType``,
``hasExtension``, ``time``/``date``/``weekday``/``isotime``/``isodate``, ``datetimeformat``,
``idleDuration`` and ``timeDiff`` (all on the context's frozen clock)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from engine.macros.context import ChatMessage
from engine.macros.registry import ArgSpec, MacroDef, Registry
from engine.macros.timefmt import format_moment, humanize, parse_date, utc_offset_time, zone

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv


def _settled(message: ChatMessage) -> bool:
    """False while a swipe is being generated (its ``swipe_id`` points past the swipes)."""
    swipes = message.swipes
    return not (
        swipes is not None and message.swipe_id is not None and message.swipe_id >= len(swipes)
    )


def _last_index(env: MacroEnv, user: bool | None = None) -> int:
    chat = env.context.chat
    for index in range(len(chat) - 1, -1, -1):
        message = chat[index]
        if not _settled(message):
            continue
        if user is None:
            return index
        if not message.is_system and message.is_user == user:
            return index
    return -1


def _message(env: MacroEnv, user: bool | None) -> str:
    index = _last_index(env, user)
    return env.context.chat[index].mes if index >= 0 else ""


def _last_message_id(env: MacroEnv, args: list[str]) -> str:
    index = _last_index(env)
    return str(index) if index >= 0 else ""


def _last_swipe_id(env: MacroEnv, args: list[str]) -> str:
    chat = env.context.chat
    if not chat or chat[-1].swipes is None:
        return ""
    return str(len(chat[-1].swipes))


def _current_swipe_id(env: MacroEnv, args: list[str]) -> str:
    chat = env.context.chat
    if not chat or chat[-1].swipe_id is None:
        return ""
    return str(chat[-1].swipe_id + 1)


def _first_included(env: MacroEnv, args: list[str]) -> str:
    value = env.context.chat_metadata.get("lastInContextMessageId")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(int(value)) if value == int(value) else str(value)
    return ""


def _all_range(env: MacroEnv, args: list[str]) -> str:
    count = len(env.context.chat)
    return f"0-{count - 1}" if count else ""


def _has_extension(env: MacroEnv, args: list[str]) -> str:
    return "true" if env.context.extensions.get(args[0].strip(), False) else "false"


def local_now(env: MacroEnv) -> datetime:
    """The frozen clock in the context's time zone."""
    return env.now.astimezone(zone(env.context.tz))


def _time(env: MacroEnv, args: list[str]) -> str:
    moment = utc_offset_time(env.now, args[0]) if args else None
    return format_moment(moment or local_now(env), "LT")


def _idle(env: MacroEnv, args: list[str]) -> str:
    seen = False
    for message in reversed(env.context.chat):
        if message.is_system:
            continue
        if seen and message.is_user:
            sent = parse_date(message.send_date, zone(env.context.tz))
            if sent is None:
                return "just now"
            return humanize((env.now - sent).total_seconds() * 1000)
        seen = True
    return "just now"


def _time_diff(env: MacroEnv, args: list[str]) -> str:
    tz = zone(env.context.tz)
    left = parse_date(args[0], tz)
    right = parse_date(args[1], tz)
    if left is None or right is None:
        return "Invalid date"
    return humanize((left - right).total_seconds() * 1000, with_suffix=True)


def _formatter(fmt: str) -> MacroDef:
    def handler(env: MacroEnv, args: list[str]) -> str:
        return format_moment(local_now(env), fmt)

    return MacroDef(name="__fmt", handler=handler)


def install(registry: Registry) -> None:
    """Register chat, state and time built-ins."""
    defs = [
        MacroDef(name="lastMessage", handler=lambda e, a: _message(e, None)),
        MacroDef(name="lastMessageId", handler=_last_message_id),
        MacroDef(name="lastUserMessage", handler=lambda e, a: _message(e, True)),
        MacroDef(name="lastCharMessage", handler=lambda e, a: _message(e, False)),
        MacroDef(name="firstIncludedMessageId", handler=_first_included),
        MacroDef(name="firstDisplayedMessageId", handler=lambda e, a: ""),
        MacroDef(name="lastSwipeId", handler=_last_swipe_id),
        MacroDef(name="currentSwipeId", handler=_current_swipe_id),
        MacroDef(name="allChatRange", handler=_all_range),
        MacroDef(name="lastGenerationType", handler=lambda e, a: e.context.last_generation_type),
        MacroDef(
            name="hasExtension", handler=_has_extension, args=(ArgSpec(name="extensionName"),)
        ),
        MacroDef(name="time", handler=_time, args=(ArgSpec(name="offset", optional=True),)),
        MacroDef(name="date", handler=_formatter("LL").handler),
        MacroDef(name="weekday", handler=_formatter("dddd").handler),
        MacroDef(name="isotime", handler=_formatter("HH:mm").handler),
        MacroDef(name="isodate", handler=_formatter("YYYY-MM-DD").handler),
        MacroDef(
            name="datetimeformat",
            handler=lambda e, a: format_moment(local_now(e), a[0]),
            args=(ArgSpec(name="format"),),
        ),
        MacroDef(name="idleDuration", aliases=("idle_duration",), handler=_idle),
        MacroDef(
            name="timeDiff",
            handler=_time_diff,
            args=(ArgSpec(name="left"), ArgSpec(name="right")),
        ),
    ]
    for definition in defs:
        registry.register(definition)
