"""Fixtures: a FakeDiscord world, a paced fake service, and a DiscordRunner pointed at both;
and for the real-engine tests, the fake OpenAI server and a TavernService on a SQLite file."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.options import DiscordOptions
from adapters.discord.runner import DiscordRunner
from engine.turns.api import MAIN_BRANCH, OnText, ReplyView, SessionKey, UserLine
from engine.turns.options import SessionDefaults
from tests.fakes.discord import Channel, FakeDiscord, Guild, Limits, Role, User
from tests.fakes.discord.world import (
    MANAGE_GUILD,
    MANAGE_MESSAGES,
    MANAGE_WEBHOOKS,
    MEMBER_DEFAULT,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.roleplay import FakeRoleplayService
from tests.test_discord.real_engine import (
    MODEL_LIFETIME_S,
    MODEL_REQUESTS,
    QUIET_DEFAULTS,
    Engine,
    RealStarter,
)

WAIT_S = 5.0


class PacedService(FakeRoleplayService):
    """The fake service with a model delay and a pause after each streamed chunk."""

    def __init__(self, *, model_delay_s: float = 0.0, chunk_delay_s: float = 0.02) -> None:
        super().__init__()
        self.model_delay_s = model_delay_s
        self.chunk_delay_s = chunk_delay_s
        self.generating = 0
        self.max_generating: dict[tuple[SessionKey, str], int] = {}
        self._active: dict[tuple[SessionKey, str], int] = {}

    def _paced(self, on_text: OnText | None) -> OnText | None:
        if on_text is None:
            return None

        async def paced(text: str) -> None:
            await on_text(text)
            await asyncio.sleep(self.chunk_delay_s)

        return paced

    async def respond(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
        **group: Any,
    ) -> ReplyView:
        self.generating += 1
        where = (key, branch)
        self._active[where] = self._active.get(where, 0) + 1
        self.max_generating[where] = max(self.max_generating.get(where, 0), self._active[where])
        try:
            await asyncio.sleep(self.model_delay_s)
            return await super().respond(key, branch, lines, on_text=self._paced(on_text), **group)
        finally:
            self.generating -= 1
            self._active[where] -= 1

    async def regenerate(
        self,
        key: SessionKey,
        branch: str,
        *,
        floor: int | None = None,
        on_text: OnText | None = None,
    ) -> ReplyView:
        await asyncio.sleep(self.model_delay_s)
        return await super().regenerate(key, branch, floor=floor, on_text=self._paced(on_text))

    async def greet(
        self, key: SessionKey, branch: str = MAIN_BRANCH, *, user_name: str = "User"
    ) -> ReplyView | None:
        """Nothing: the cards these tests import (:func:`card`) have a name only, so no
        greeting, as a real card without ``first_mes``. The greeting itself is tested on the
        real engine (test_real_engine_greeting.py)."""
        self.calls.append(("greet", (key, branch, user_name)))
        return None

    def respond_calls(self) -> list[Any]:
        """The arguments of every respond() call."""
        return [args for name, args in self.calls if name == "respond"]


@dataclass
class World:
    """The fake Discord with one played guild and a second, separate guild."""

    fake: FakeDiscord
    guild: Guild
    rp: Channel
    other: Channel
    gm_role: Role
    alice: User
    bob: User
    carol: User
    gm: User
    mod: User
    guild2: Guild
    rp2: Channel
    gm2: User


def build_world(fake: FakeDiscord, *, bot_permissions: int | None = None) -> World:
    """Guild "Tavern" (#rp, #other; players, a game master, a moderator) and guild "Elsewhere"."""
    perms = (
        bot_permissions
        if bot_permissions is not None
        else (MEMBER_DEFAULT | MANAGE_WEBHOOKS | MANAGE_MESSAGES)
    )
    guild = fake.add_guild("Tavern", bot_permissions=perms)
    gm_role = fake.add_role(guild, "Game Master")
    mod_role = fake.add_role(guild, "Moderator", MANAGE_MESSAGES)
    guild2 = fake.add_guild("Elsewhere", bot_permissions=perms)
    gm2_role = fake.add_role(guild2, "Admin", MANAGE_GUILD)
    return World(
        fake=fake,
        guild=guild,
        rp=fake.add_channel(guild, "rp"),
        other=fake.add_channel(guild, "other"),
        gm_role=gm_role,
        alice=fake.add_member(guild, "Alice"),
        bob=fake.add_member(guild, "Bob"),
        carol=fake.add_member(guild, "Carol"),
        gm=fake.add_member(guild, "Gwen", roles=[gm_role]),
        mod=fake.add_member(guild, "Mo", roles=[mod_role]),
        guild2=guild2,
        rp2=fake.add_channel(guild2, "rp"),
        gm2=fake.add_member(guild2, "Zed", roles=[gm2_role]),
    )


def options_for(fake: FakeDiscord, **overrides: Any) -> DiscordOptions:
    """Options pointing at ``fake``, with test-sized timings."""
    base = DiscordOptions(
        token=fake.token,
        api_base=fake.api_base,
        gateway_url=fake.gateway_url,
        reply_policy="every_message",
        quiet_period_s=0.5,
        guild_ready_timeout_s=0.05,
        edit_interval_s=0.05,
        edit_rate_per_s=100.0,
        edit_burst=20,
        delivery_backoff_s=0.01,
        redelivery_delay_s=0.05,
    )
    return replace(base, **overrides)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    """A started FakeDiscord that stops itself within a minute."""
    server = await FakeDiscord(limits=Limits(max_lifetime_s=60, max_requests=5_000)).start()
    yield server
    await server.stop()
    assert server.unhandled == [], f"routes the fake does not serve: {server.unhandled}"


@pytest.fixture
def world(fake: FakeDiscord) -> World:
    """The standard world (built before the bot connects)."""
    return build_world(fake)


@pytest.fixture
def service() -> PacedService:
    """The in-memory service (no model delay)."""
    return PacedService()


Starter = Callable[..., Awaitable[DiscordRunner]]


@pytest.fixture
async def start_bot(fake: FakeDiscord, service: PacedService) -> AsyncIterator[Starter]:
    """Start runners against the fake; each is closed and checked for errors at teardown."""
    runners: list[DiscordRunner] = []

    async def start(svc: Any = None, **overrides: Any) -> DiscordRunner:
        runner = DiscordRunner(svc or service, options_for(fake, **overrides))
        runners.append(runner)
        await runner.start()
        await runner.wait_ready(WAIT_S)
        return runner

    yield start
    for runner in runners:
        await runner.close()
    for runner in runners:
        assert runner.errors == [], runner.errors
        assert runner.tasks.failures == [], runner.tasks.failures


def card(name: str) -> tuple[str, bytes]:
    """A card file the fake service imports (it only reads the name)."""
    return (f"{name.lower()}.json", json.dumps({"name": name}).encode())


async def bind(world: World, channel: Channel | None = None, character: str = "Seraphina") -> None:
    """A game master imports ``character`` and binds a channel to it with /tavern start."""
    where = channel or world.rp
    imported = await world.fake.slash(where, world.gm, "character import", file=card(character))
    assert f"Imported card **{character}**" in imported.text, imported.text
    record = await world.fake.slash(where, world.gm, "tavern start", character=character)
    assert "plays here now" in record.text, record.text


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAIServer]:
    """The fake OpenAI server (echoes the last user message unless scripted)."""
    async with FakeOpenAIServer(
        max_requests=MODEL_REQUESTS, hang_limit_s=10.0, lifetime_s=MODEL_LIFETIME_S
    ) as server:
        yield server


@pytest.fixture
def session_defaults() -> SessionDefaults:
    """What new sessions start with (a test module overrides this fixture to change it)."""
    return QUIET_DEFAULTS


@pytest.fixture
async def engine(
    tmp_path: Path, model: FakeOpenAIServer, session_defaults: SessionDefaults
) -> AsyncIterator[Engine]:
    """The real engine, open; closed after the test (after the bots, which close first)."""
    found = Engine(tmp_path / "discord.db", model, session_defaults)
    await found.open()
    yield found
    await found.close()


@pytest.fixture
async def start_real(engine: Engine, start_bot: Starter) -> RealStarter:
    """Start a bot on the open engine (listing ``engine`` first makes it close after the bots)."""

    async def start(**options: Any) -> DiscordRunner:
        return await start_bot(engine.svc, **options)

    return start
