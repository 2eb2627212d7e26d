"""On the real engine: group floors in the quiet period, every slash command for whom it should
(and refused to others, changing nothing), ``/vars set`` in the next prompt, guild isolation."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from engine.turns.api import SessionKey
from engine.turns.service import TavernService
from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_discord.conftest import World
from tests.test_discord.real_engine import (
    CARD_NAME,
    Engine,
    RealStarter,
    key_of,
    narrator_requests,
    prompt_text,
    reply_text,
    say_and_wait,
    start_playing,
    webhook_replies,
)

pytestmark = pytest.mark.timeout(60)

OTHER_CARD = (
    "kazuma.json",
    json.dumps(
        {"spec": "chara_card_v2", "data": {"name": "Kazuma", "description": "lucky"}}
    ).encode(),
)
PRESET = (
    "dark.json",
    json.dumps(
        {
            "prompts": [
                {
                    "identifier": "main",
                    "name": "Main",
                    "content": "Weather: {{getglobalvar::weather}}.",
                }
            ]
        }
    ).encode(),
)
WORLDBOOK = (
    "eldoria.json",
    json.dumps(
        {"entries": {"0": {"uid": 0, "key": ["well"], "content": "The well is cursed."}}}
    ).encode(),
)
REGEX = (
    "trim.json",
    json.dumps(
        [
            {
                "scriptName": "Trim",
                "findRegex": "/xyzzy/g",
                "replaceString": "plugh",
                "placement": [1],
            }
        ]
    ).encode(),
)
GROUP_PRESET = ("group.json", json.dumps({"names_behavior": 2}).encode())
_KIND = {"dark.json": "preset", "eldoria.json": "worldbook"}


async def _state(svc: TavernService, key: SessionKey) -> tuple[Any, ...]:
    """What a refused command must leave untouched."""
    info = await svc.session_info(key)
    history = [(v.floor, v.page, v.text) for v in await svc.history(key, "main")]
    return info, await svc.variables(key, "main", "chat"), history


@dataclass(frozen=True)
class Ctx:
    """What an effect check may look at."""

    fake: FakeDiscord
    world: World
    model: FakeOpenAIServer
    svc: TavernService
    key: SessionKey


Check = Callable[[Ctx], Awaitable[bool]]


async def _info(ctx: Ctx) -> Any:
    return await ctx.svc.session_info(ctx.key)


async def _mood_is_grim(ctx: Ctx) -> bool:
    return (await ctx.svc.variables(ctx.key, "main", "chat")).get("mood") == "grim"


async def _no_gold(ctx: Ctx) -> bool:
    return "gold" not in await ctx.svc.variables(ctx.key, "main", "chat")


async def _kazuma(ctx: Ctx) -> bool:
    return (await _info(ctx)).character == "Kazuma"


async def _preset(ctx: Ctx) -> bool:
    return (await _info(ctx)).preset == "dark"


async def _attached(ctx: Ctx) -> bool:
    return "eldoria" in (await _info(ctx)).worldbooks


async def _detached(ctx: Ctx) -> bool:
    return "eldoria" not in (await _info(ctx)).worldbooks


async def _regex(ctx: Ctx) -> bool:
    """The imported script rewrites what users type (placement 1) before the model sees it."""
    count = len(webhook_replies(ctx.fake, ctx.world.rp.id))
    ctx.model.script(reply_text("Noted."))
    await say_and_wait(
        ctx.fake,
        ctx.world.rp,
        ctx.world.gm,
        "say xyzzy twice",
        done=lambda: len(webhook_replies(ctx.fake, ctx.world.rp.id)) > count,
    )
    return "say plugh twice" in prompt_text(narrator_requests(ctx.model)[-1])


async def _reset(ctx: Ctx) -> bool:
    return await ctx.svc.history(ctx.key, "main") == []


async def _stopped(ctx: Ctx) -> bool:
    """No more replies here, and the service marks the session closed."""
    asked = len(ctx.model.chat_requests)
    await ctx.fake.say(ctx.world.rp, ctx.world.alice, "anyone?")
    await ctx.fake.wait_idle(quiet=0.3)
    return len(ctx.model.chat_requests) == asked and (await _info(ctx)).closed


@dataclass(frozen=True)
class Write:
    """A write command: options, game-master commands run first, the answer, its effect."""

    line: str
    options: dict[str, Any]
    answer: str
    effect: Check
    before: tuple[tuple[str, dict[str, Any]], ...] = ()


WRITES = [
    Write(
        "vars set", {"name": "mood", "value": "grim"}, "Set `mood` = grim in chat", _mood_is_grim
    ),
    Write("vars delete", {"name": "gold"}, "Deleted `gold` from chat", _no_gold),
    Write("character import", {"file": OTHER_CARD}, "Imported card **Kazuma**", _kazuma),
    Write(
        "character set",
        {"name": "Kazuma"},
        "**Kazuma** plays here now",
        _kazuma,
        before=(
            ("character import", {"file": OTHER_CARD}),
            ("character set", {"name": CARD_NAME}),
        ),
    ),
    Write("preset import", {"file": PRESET}, "Imported preset **dark**", _preset),
    Write("preset set", {"name": "dark"}, "Using preset **dark**", _preset),
    Write("worldbook import", {"file": WORLDBOOK}, "Imported worldbook **eldoria**", _attached),
    Write(
        "worldbook attach",
        {"name": "eldoria"},
        "Using worldbook **eldoria**",
        _attached,
    ),
    Write(
        "worldbook detach",
        {"name": "eldoria"},
        "Detached worldbook **eldoria**",
        _detached,
        before=(("worldbook import", {"file": WORLDBOOK}),),
    ),
    Write("regex import", {"file": REGEX}, "Imported regex **trim**", _regex),
    Write("session reset", {}, "starts over", _reset),
    Write(
        "tavern start",
        {"character": "Kazuma"},
        "**Kazuma** plays here now",
        _kazuma,
        # Imported in another channel: known to the guild, not played in #rp yet.
        before=(("character import", {"file": OTHER_CARD, "channel": "other"}),),
    ),
    Write("tavern stop", {}, "The tavern is closed here", _stopped),
]
READS: list[tuple[str, dict[str, Any], str]] = [
    ("vars list", {}, "`gold` = 10"),
    ("vars get", {"name": "gold"}, "`gold` = 10"),
    ("vars history", {"name": "gold"}, "chat · explicit: 10"),
    ("character info", {}, f"Character: **{CARD_NAME}**"),
    ("session info", {}, "Session `discord/"),
    ("session export", {}, "Exported branch `main`"),
    ("preview", {"text": "I am {{char}}, gold {{getvar::gold}}"}, f"I am {CARD_NAME}, gold 10"),
    ("dryrun", {"text": "probe"}, "Assembled prompt:"),
    ("memory list", {}, "Nothing remembered."),
    ("memory search", {"query": "well"}, "Nothing remembered about “well”."),
    ("persona show", {}, "No persona"),
]


async def _prepared(
    fake: FakeDiscord, world: World, start_real: RealStarter, model: FakeOpenAIServer
) -> None:
    await start_playing(fake, world, start_real)
    # In the guild's library (imported in an unbound channel): known, used nowhere yet.
    for file in (PRESET, WORLDBOOK):
        await fake.slash(world.other, world.gm, f"{_KIND[file[0]]} import", file=file)
    record = await fake.slash(world.rp, world.gm, "vars set", name="gold", value="10")
    assert "Set `gold` = 10" in record.text
    model.script(reply_text("Welcome in."))
    await say_and_wait(
        fake, world.rp, world.alice, "hello", done=lambda: webhook_replies(fake, world.rp.id)
    )


@pytest.mark.parametrize(("line", "options", "expected"), READS, ids=[r[0] for r in READS])
async def test_reads_are_open_to_members(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    model: FakeOpenAIServer,
    line: str,
    options: dict[str, Any],
    expected: str,
) -> None:
    await _prepared(fake, world, start_real, model)
    record = await fake.slash(world.rp, world.alice, line, **options)
    assert expected in record.text, record.text
    assert record.ephemeral
    if line == "session export":
        name, data = record.files[0]
        rows = [json.loads(row) for row in data.decode().splitlines() if row.strip()]
        assert name.endswith("-main.jsonl") and rows[-1]["mes"] == "Welcome in."
    if line == "dryrun":
        dry = json.loads(record.files[0][1])
        assert any("probe" in str(m.get("content")) for m in dry["messages"])


@pytest.mark.parametrize("write", WRITES, ids=[w.line for w in WRITES])
async def test_writes_need_the_game_master(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
    write: Write,
) -> None:
    await _prepared(fake, world, start_real, model)
    for setup, values in write.before:
        where = world.other if values.get("channel") == "other" else world.rp
        values = {k: v for k, v in values.items() if k != "channel"}
        await fake.slash(where, world.gm, setup, **values)
    ctx = Ctx(fake=fake, world=world, model=model, svc=engine.svc, key=key_of(world))
    state = await _state(engine.svc, ctx.key)
    refused = await fake.slash(world.rp, world.alice, write.line, **write.options)
    assert "Game Master" in refused.text and refused.ephemeral
    assert await _state(engine.svc, ctx.key) == state, "a refused command changed nothing"
    allowed = await fake.slash(world.rp, world.gm, write.line, **write.options)
    assert allowed.ephemeral
    assert write.answer in allowed.text, allowed.text
    assert await write.effect(ctx)


async def test_three_users_in_the_quiet_period_make_one_floor_with_three_lines(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real, reply_policy="quiet_period", quiet_period_s=1.0)
    # Names in the message text (SillyTavern's "names behaviour: in content"); with the default
    # preset the engine sends the lines without names (it never marks a floor as a group's).
    imported = await fake.slash(world.rp, world.gm, "preset import", file=GROUP_PRESET)
    assert "Imported preset **group**" in imported.text
    model.script(reply_text("The goddess nods at all three."))
    await fake.say(world.rp, world.alice, "I draw my sword.")
    await fake.say(world.rp, world.bob, "I hide behind the bar.")
    await fake.say(world.rp, world.carol, "I order an ale.")
    await fake.wait_for(lambda: webhook_replies(fake, world.rp.id), wait_s=10, what="one reply")
    await fake.wait_idle(quiet=0.3)
    assert len(narrator_requests(model)) == 1
    assert len(webhook_replies(fake, world.rp.id)) == 1
    users = [m["content"] for m in narrator_requests(model)[0].messages if m["role"] == "user"]
    assert users[-3:] == [
        "Alice: I draw my sword.",
        "Bob: I hide behind the bar.",
        "Carol: I order an ale.",
    ]
    history = await engine.svc.history(key_of(world), "main")
    assert [v.floor for v in history] == [1]
    exported = await engine.svc.export_chat(key_of(world), "main")
    rows = [json.loads(row) for row in exported.decode().splitlines() if row.strip()]
    users = [(r["name"], r["mes"]) for r in rows if r.get("is_user")]
    assert users == [
        ("Alice", "I draw my sword."),
        ("Bob", "I hide behind the bar."),
        ("Carol", "I order an ale."),
    ]


async def test_vars_set_reaches_the_next_prompt_and_no_other_guild(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await _prepared(fake, world, start_real, model)
    await fake.slash(world.rp, world.gm, "preset import", file=PRESET)
    await fake.slash(world.rp, world.gm, "vars set", name="mood", value="grim")
    await fake.slash(world.rp, world.gm, "vars set", name="weather", value="storm", scope="global")
    await say_and_wait(
        fake,
        world.rp,
        world.bob,
        "what now?",
        done=lambda: len(webhook_replies(fake, world.rp.id)) == 2,
    )
    prompt = prompt_text(narrator_requests(model)[-1])
    assert "Mood: grim." in prompt and "Weather: storm." in prompt
    # A second guild sees none of it: not even the first guild's card.
    assert (
        await fake.autocomplete(
            world.rp2, world.gm2, "tavern start", focused="character", character=""
        )
        == []
    )
    refused = await fake.slash(world.rp2, world.gm2, "tavern start", character=CARD_NAME)
    assert f"No character **{CARD_NAME}** here: none is imported yet" in refused.text
    await fake.slash(world.rp2, world.gm2, "character import", file=OTHER_CARD)
    record = await fake.slash(world.rp2, world.gm2, "tavern start", character="Kazuma")
    assert "plays here now" in record.text
    for scope in (None, "global", "chat", "branch"):
        options = {"scope": scope} if scope else {}
        other = await fake.slash(world.rp2, world.gm2, "vars list", **options)
        assert "none" in other.text and "storm" not in other.text and "grim" not in other.text
    missing = await fake.slash(world.rp2, world.gm2, "vars get", name="weather", scope="global")
    assert "not set" in missing.text
    shown = await fake.slash(
        world.rp2, world.gm2, "preview", text="[{{getglobalvar::weather}}|{{getvar::mood}}]"
    )
    assert shown.text == "[|]"
    assert await fake.autocomplete(world.rp2, world.gm2, "vars get", focused="name", name="") == []
    assert await fake.autocomplete(
        world.rp2, world.gm2, "tavern start", focused="character", character=""
    ) == ["Kazuma"]
    await say_and_wait(
        fake, world.rp2, world.gm2, "hello there", done=lambda: webhook_replies(fake, world.rp2.id)
    )
    elsewhere = prompt_text(narrator_requests(model)[-1])
    assert "hello there" in elsewhere
    for secret in ("storm", "grim", "water goddess", "what now?"):
        assert secret not in elsewhere
    assert (await engine.svc.variables(key_of(world, world.guild2.id, world.rp2.id), "main")) == {}
