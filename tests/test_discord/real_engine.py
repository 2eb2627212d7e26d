"""The Discord front end on the real engine: a TavernService on a SQLite file, with its model
served by the loopback fake OpenAI server through the real openai client.

:class:`Engine` opens (and re-opens, for restarts) the storage and the service on one database
file; the fake OpenAI server lives across restarts so a test can read every prompt it received.
The ``model``, ``engine`` and ``start_real`` fixtures that build them are in ``conftest.py``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.discord.convert import session_key
from adapters.discord.runner import DiscordRunner
from adapters.llm import ChatModelPool
from adapters.storage import SqlStorage, open_storage
from bot.scheduler import build_memory_service
from engine.memory.agent_context import AGENT_SYSTEM_PROMPT
from engine.turns.api import SessionKey
from engine.turns.options import SessionDefaults
from engine.turns.profiles import LLMProfile, NoSecretCipher
from engine.turns.service import TavernService
from tests.fakes.discord import FakeDiscord, InteractionRecord
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeToolCall, RecordedRequest

if TYPE_CHECKING:
    # Only for annotations: conftest imports this module to build its real-engine fixtures.
    from tests.test_discord.conftest import World

MODEL_REQUESTS = 200  # the fake model answers 503 past this many requests
QUIET_DEFAULTS = SessionDefaults(memory=False)
"""What sessions start with in the tests of other things: the configuration's defaults with
memory off, so no memory agent asks the scripted fake model between turns. The tests of the
defaults themselves (issue 13) use ``SessionDefaults()``, the configuration's own."""
MODEL_LIFETIME_S = 90.0
CARD_NAME = "Aqua"
CARD = (
    "aqua.json",
    json.dumps(
        {
            "spec": "chara_card_v2",
            "spec_version": "2.0",
            "data": {
                "name": CARD_NAME,
                "description": "A water goddess who keeps the tavern. Mood: {{getvar::mood}}.",
                "personality": "cheerful",
                "scenario": "The Tavern at the Crossroads.",
                # No greeting: the tests of other things count the replies to their own
                # messages (the greeting's tests use a card of their own).
                "first_mes": "",
                "mes_example": "",
            },
        }
    ).encode(),
)


class Engine:
    """A TavernService on one SQLite file; ``open()`` again after ``close()`` is a restart."""

    def __init__(
        self, path: Path, model: FakeOpenAIServer, defaults: SessionDefaults | None = None
    ) -> None:
        self.url = f"sqlite+aiosqlite:///{path}"
        self.model = model
        self.defaults = defaults or SessionDefaults()
        self.storage: SqlStorage | None = None
        self.pool: ChatModelPool | None = None
        self.service: TavernService | None = None
        self.opened = 0

    async def open(self) -> TavernService:
        """Open the database, start the service (crash recovery included) and return it."""
        self.storage = await open_storage(self.url)
        pool = self.pool = ChatModelPool()
        default = LLMProfile(
            id="environment",
            provider="openai",
            base_url=self.model.base_url,
            model="fake-model",
            timeout_s=10.0,
            max_retries=0,
        )
        # Long-term memory on the same database; its agent runs in sessions whose memory is
        # on (and whose prompt mode has it), asking the same fake model.
        memory = build_memory_service(self.storage, model=None, model_name="fake-model")
        self.service = TavernService(
            self.storage,
            model_for=lambda profile: pool.for_profile(profile, NoSecretCipher(), {}),
            default_profile=default,
            memory=memory,
            session_defaults=self.defaults,
        )
        await self.service.start()
        self.opened += 1
        return self.service

    async def close(self) -> None:
        """Close the service, the model pool and the database."""
        if self.service is not None:
            await self.service.aclose()
            self.service = None
        if self.pool is not None:
            await self.pool.aclose()
            self.pool = None
        if self.storage is not None:
            await self.storage.close()
            self.storage = None

    @property
    def svc(self) -> TavernService:
        """The open service."""
        assert self.service is not None, "the engine is not open"
        return self.service


RealStarter = Callable[..., Awaitable[DiscordRunner]]


def key_of(world: World, guild: int | None = None, channel: int | None = None) -> SessionKey:
    """The session key of a channel (the played channel of the first guild by default)."""
    return session_key(guild or world.guild.id, channel or world.rp.id)


def reply_text(text: str) -> FakeReply:
    """A scripted model reply, streamed in small chunks."""
    return FakeReply(text=text, chunk_chars=40)


def set_var(name: str, value: Any, scope: str | None = None) -> FakeReply:
    """A scripted tool call of ``set_variable``."""
    args: dict[str, Any] = {"name": name, "value": value}
    if scope is not None:
        args["scope"] = scope
    return FakeReply(tool_calls=[FakeToolCall(name="set_variable", arguments=json.dumps(args))])


def prompt_text(request: RecordedRequest) -> str:
    """Every message of a model request, one per line, as ``role[name]: content``."""
    return "\n".join(
        f"{m.get('role')}[{m.get('name') or ''}]: {m.get('content') or ''}"
        for m in request.messages
    )


def _is_memory_agent(request: RecordedRequest) -> bool:
    first = request.messages[0] if request.messages else {}
    return str(first.get("content", "")).startswith(AGENT_SYSTEM_PROMPT[:40])


def narrator_requests(model: FakeOpenAIServer) -> list[RecordedRequest]:
    """The chat requests that carry the story (the narrator's, not tool follow-ups only, and
    not the memory agent's, which runs after a turn in sessions with memory on)."""
    return [
        r
        for r in model.chat_requests
        if any(m.get("role") == "user" for m in r.messages) and not _is_memory_agent(r)
    ]


def agent_requests(model: FakeOpenAIServer) -> list[RecordedRequest]:
    """The memory agent's requests."""
    return [r for r in model.chat_requests if _is_memory_agent(r)]


def webhook_replies(fake: FakeDiscord, channel_id: int) -> list[dict[str, Any]]:
    """The webhook (character) messages in a channel or thread, oldest first."""
    return [
        m
        for m in fake.messages.values()
        if m["channel_id"] == str(channel_id) and "webhook_id" in m
    ]


async def import_card(fake: FakeDiscord, world: World, channel: Any = None) -> InteractionRecord:
    """A game master imports the card with ``/character import`` and an attachment."""
    record = await fake.slash(channel or world.rp, world.gm, "character import", file=CARD)
    assert f"Imported card **{CARD_NAME}**" in record.text, record.text
    return record


async def start_playing(
    fake: FakeDiscord, world: World, start_real: RealStarter, **options: Any
) -> DiscordRunner:
    """Start a bot on the engine, import the card into the guild and bind #rp to it."""
    runner = await start_real(**options)
    await import_card(fake, world, world.other)
    record = await fake.slash(world.rp, world.gm, "tavern start", character=CARD_NAME)
    assert f"**{CARD_NAME}** plays here now" in record.text, record.text
    return runner


async def say_and_wait(
    fake: FakeDiscord,
    channel: Any,
    user: Any,
    text: str,
    *,
    done: Callable[[], object],
    wait_s: float = 10.0,
) -> dict[str, Any]:
    """``user`` says ``text``; wait until ``done()`` holds and the bot is idle again."""
    said = await fake.say(channel, user, text)
    await fake.wait_for(done, wait_s=wait_s, what=f"the answer to {text!r}")
    await fake.wait_idle(quiet=0.15, wait_s=wait_s)
    return said
