"""Discord sharded across two processes (issue 19): two ``tavernbot run`` processes on one
PostgreSQL database, each serving half of four shards of one bot, against one fake gateway.

Each guild sits on its own shard; the fake gateway sends a guild's events to the session of
its shard only, as Discord does. The processes ask the fake model under different model names,
so every model request says which process made it. Every guild must be served by exactly one
process (the one holding its shard): its commands answered, its message answered once; the
commands are published once, by the process holding shard 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.fakes.discord import FakeDiscord, Limits
from tests.fakes.discord.world import MANAGE_GUILD, Channel, Guild, User
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_discord.real_engine import CARD, CARD_NAME, webhook_replies
from tests.test_e2e.test_two_processes import pg_database  # noqa: F401  (fixture)

pytestmark = pytest.mark.timeout(150)

SHARD_COUNT = 4
PROCESSES = {"model-a": [0, 1], "model-b": [2, 3]}
"""Each process's model name (how its model requests are told apart) and its shards."""
START_WAIT_S = 60.0
"""How long both processes may take to connect every shard (discord.py waits 5 s between
the IDENTIFYs of one process's shards, as Discord asks)."""
ANSWER_WAIT_S = 30.0
STOP_WAIT_S = 20.0


@dataclass
class Place:
    """A guild on one shard, its played channel and its members."""

    shard: int
    guild: Guild
    channel: Channel
    admin: User
    player: User


def build_places(fake: FakeDiscord) -> list[Place]:
    """One guild per shard, each with #rp, an admin (Manage Server) and a player."""
    places = []
    for shard in range(SHARD_COUNT):
        guild = fake.add_guild(f"Guild{shard}", shard=(shard, SHARD_COUNT))
        admin_role = fake.add_role(guild, "Admin", MANAGE_GUILD)
        places.append(
            Place(
                shard=shard,
                guild=guild,
                channel=fake.add_channel(guild, "rp"),
                admin=fake.add_member(guild, f"Admin{shard}", roles=[admin_role]),
                player=fake.add_member(guild, f"Player{shard}"),
            )
        )
    return places


def write_config(
    path: Path, *, model: str, shards: list[int], fake: FakeDiscord, llm: str
) -> None:
    """One process's ``tavernbot.toml``: the shared database comes from the environment."""
    path.write_text(
        f'[llm]\nbase_url = "{llm}"\nmodel = "{model}"\nmax_retries = 0\n'
        f'[discord]\ntoken = "{fake.token}"\napi_base = "{fake.api_base}"\n'
        f'gateway_url = "{fake.gateway_url}"\nreply_policy = "every_message"\n'
        f"shard_count = {SHARD_COUNT}\nshard_ids = {shards}\n"
        "[session]\nmemory = false\n",
        encoding="utf-8",
    )


def process_env(database_url: str) -> dict[str, str]:
    """The test's environment without model, platform or database variables, plus the
    shared database."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LLM_", "DISCORD", "TELE", "DATABASE_", "TAVERNBOT_"))
    }
    return {**env, "PYTHONPATH": str(ROOT), "DATABASE_URL": database_url}


async def start_process(
    config: Path, env: dict[str, str], log: Path, command: str = "run"
) -> asyncio.subprocess.Process:
    """``tavernbot --config CONFIG run`` (or another command), its output in ``log``."""
    with log.open("wb") as out:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "--config",
            str(config),
            *command.split(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
            cwd=config.parent,
        )


async def stop_process(proc: asyncio.subprocess.Process) -> int | None:
    """SIGINT, then SIGKILL if it does not stop in time; its exit code (None if killed)."""
    if proc.returncode is not None:
        return proc.returncode
    proc.send_signal(signal.SIGINT)
    try:
        return await asyncio.wait_for(proc.wait(), STOP_WAIT_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return None


def read_logs(directory: Path) -> dict[str, str]:
    """Each process's output."""
    return {p.name: p.read_text(errors="replace") for p in directory.glob("*.log")}


def command_syncs(fake: FakeDiscord) -> list[str]:
    """The REST calls that published application commands."""
    return [c.path for c in fake.calls if c.method == "PUT" and c.path.endswith("/commands")]


def models_asked_about(model: FakeOpenAIServer, text: str) -> list[str]:
    """The model names of the requests whose messages contain ``text``."""
    return [
        str(r.body["model"])
        for r in model.chat_requests
        if any(text in str(m.get("content") or "") for m in r.messages)
    ]


async def test_each_guild_is_served_by_the_one_process_holding_its_shard(
    tmp_path: Path,
    pg_database: str,  # noqa: F811
) -> None:
    fake = await FakeDiscord(limits=Limits(max_lifetime_s=140, max_requests=5_000)).start()
    procs: list[asyncio.subprocess.Process] = []
    try:
        async with FakeOpenAIServer(max_requests=100, lifetime_s=140.0) as model:
            places = build_places(fake)
            env = process_env(pg_database)
            configs = []
            for name, shards in PROCESSES.items():
                config = tmp_path / name / "tavernbot.toml"
                config.parent.mkdir()
                write_config(config, model=name, shards=shards, fake=fake, llm=model.base_url)
                configs.append(config)
            # As the README says: migrate once, then start every process at the same time.
            upgrade = await start_process(configs[0], env, tmp_path / "upgrade.txt", "db upgrade")
            assert await asyncio.wait_for(upgrade.wait(), STOP_WAIT_S) == 0
            for config in configs:
                log = tmp_path / f"{config.parent.name}.log"
                procs.append(await start_process(config, env, log))

            await fake.wait_for(
                lambda: fake.gateway.live_shards == list(range(SHARD_COUNT)),
                wait_s=START_WAIT_S,
                what="every shard connected once",
            )
            # Each process connected exactly the shards it was given, as shard i of 4.
            identified = [d["shard"] for op, d in fake.gateway_log if op == 2]
            assert sorted(identified) == [[i, SHARD_COUNT] for i in range(SHARD_COUNT)]
            assert len(command_syncs(fake)) == 1, command_syncs(fake)

            for place in places:
                record = await fake.slash(
                    place.channel, place.admin, "character import", file=CARD, wait_s=ANSWER_WAIT_S
                )
                assert f"Imported card **{CARD_NAME}**" in record.text, record.text
                record = await fake.slash(
                    place.channel,
                    place.admin,
                    "tavern start",
                    character=CARD_NAME,
                    wait_s=ANSWER_WAIT_S,
                )
                assert f"**{CARD_NAME}** plays here now" in record.text, record.text

            for place in places:
                model.script(FakeReply(text=f"Welcome to guild {place.shard}."))
                await fake.say(place.channel, place.player, f"hello from guild {place.shard}")
                await fake.wait_for(
                    functools.partial(webhook_replies, fake, place.channel.id),
                    wait_s=ANSWER_WAIT_S,
                    what=f"the answer in guild {place.shard}",
                )
            await fake.wait_idle(quiet=1.0, wait_s=ANSWER_WAIT_S)

            for place in places:
                owner = next(name for name, ids in PROCESSES.items() if place.shard in ids)
                replies = webhook_replies(fake, place.channel.id)
                assert [r["content"] for r in replies] == [f"Welcome to guild {place.shard}."]
                asked = models_asked_about(model, f"hello from guild {place.shard}")
                assert asked == [owner]
            assert len(command_syncs(fake)) == 1

            codes = [await stop_process(proc) for proc in procs]
            logs = read_logs(tmp_path)
            assert codes == [0, 0], {name: text[-2000:] for name, text in logs.items()}
            first = "serving Discord shards [0, 1] of 4; commands synced here"
            assert first in logs["model-a.log"]
            assert (
                "serving Discord shards [2, 3] of 4; commands synced by the process serving "
                "shard 0" in logs["model-b.log"]
            )
    finally:
        for proc in procs:
            await stop_process(proc)
        await fake.stop()
