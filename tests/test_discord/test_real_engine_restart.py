"""On the real engine, across a restart: what the service keeps (personas, closed sessions,
the realm's assets for autocomplete) still holds."""

from __future__ import annotations

import json

import pytest

from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
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


async def _restart(runner: object, engine: Engine, start_real: RealStarter) -> None:
    await runner.close()  # type: ignore[attr-defined]
    await engine.close()
    await engine.open()
    await start_real()


async def test_personas_name_the_speaker_and_survive_a_restart(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    runner = await start_playing(fake, world, start_real)
    record = await fake.slash(
        world.rp, world.alice, "persona set", name="Lyra", description="a bard"
    )
    assert "You play **Lyra**" in record.text
    model.script(reply_text("Hello, Lyra."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "I tune my lute.",
        done=lambda: webhook_replies(fake, world.rp.id),
    )
    assert "between Aqua and Lyra" in prompt_text(narrator_requests(model)[-1])
    await _restart(runner, engine, start_real)
    shown = await fake.slash(world.rp, world.alice, "persona show")
    model.script(reply_text("Again, Lyra."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "I play a song.",
        done=lambda: len(webhook_replies(fake, world.rp.id)) == 2,
    )
    assert "**Lyra** — a bard" in shown.text
    assert "between Aqua and Lyra" in prompt_text(narrator_requests(model)[-1])


async def test_tavern_stop_holds_across_a_restart(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    runner = await start_playing(fake, world, start_real)
    model.script(reply_text("Good night."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Closing time?",
        done=lambda: webhook_replies(fake, world.rp.id),
    )
    stopped = await fake.slash(world.rp, world.gm, "tavern stop")
    assert "closed here" in stopped.text
    await _restart(runner, engine, start_real)
    asked = len(model.chat_requests)
    await fake.say(world.rp, world.alice, "Hello? Anyone?")
    await fake.wait_idle(quiet=0.3)
    assert len(model.chat_requests) == asked, "a stopped channel stays stopped"
    assert (await engine.svc.session_info(key_of(world))).closed
    # /tavern start reopens it with its history.
    model.script(reply_text("Morning!"))
    started = await fake.slash(world.rp, world.gm, "tavern start", character=CARD_NAME)
    assert "plays here now" in started.text
    count = len(webhook_replies(fake, world.rp.id))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "We are open again.",
        done=lambda: len(webhook_replies(fake, world.rp.id)) > count,
    )
    assert "Closing time?" in prompt_text(narrator_requests(model)[-1])


async def test_character_autocomplete_after_a_restart(
    fake: FakeDiscord, world: World, start_real: RealStarter, engine: Engine
) -> None:
    runner = await start_playing(fake, world, start_real)
    before = await fake.autocomplete(
        world.rp, world.gm, "tavern start", focused="character", character="aq"
    )
    assert before == [CARD_NAME]
    await _restart(runner, engine, start_real)
    after = await fake.autocomplete(
        world.rp, world.gm, "tavern start", focused="character", character="aq"
    )
    assert after == [CARD_NAME]
    # The other guild never sees it.
    assert (
        await fake.autocomplete(
            world.rp2, world.gm2, "tavern start", focused="character", character=""
        )
        == []
    )


async def test_memory_list_and_forget_on_the_engine(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    # compat_plus runs the memory agent after each turn; its answer here is no JSON, so the
    # reply's <summary> tag becomes the remembered summary.
    await engine.svc.configure(
        key_of(world), prompt_mode="compat_plus", tools={"enabled": False}, memory=True
    )
    model.script(
        reply_text(
            "The well? Stay away. <summary>Aqua warned Alice about the cursed well.</summary>"
        ),
        FakeReply(text="not json"),
    )
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "What about the well?",
        done=lambda: webhook_replies(fake, world.rp.id),
    )
    await engine.svc.drain(10.0)
    assert "<summary>" not in webhook_replies(fake, world.rp.id)[0]["content"]
    listed = await fake.slash(world.rp, world.alice, "memory list")
    assert "cursed well" in listed.text, listed.text
    found = await fake.slash(world.rp, world.alice, "memory search", query="well")
    assert "cursed well" in found.text
    memory_id = listed.text.split("`")[1]
    refused = await fake.slash(world.rp, world.alice, "memory forget", memory_id=memory_id)
    assert "Game Master" in refused.text
    forgot = await fake.slash(world.rp, world.gm, "memory forget", memory_id=memory_id)
    assert f"Forgot memory `{memory_id}`" in forgot.text
    after = await fake.slash(world.rp, world.alice, "memory list")
    assert "cursed well" not in after.text
    assert json.dumps(after.text)


async def test_a_persona_set_in_an_unbound_channel_is_the_guilds(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    record = await fake.slash(world.other, world.bob, "persona set", name="Rook")
    assert "You play **Rook**" in record.text
    model.script(reply_text("Welcome, Rook."))
    await say_and_wait(
        fake, world.rp, world.bob, "I sit down.", done=lambda: webhook_replies(fake, world.rp.id)
    )
    assert "between Aqua and Rook" in prompt_text(narrator_requests(model)[-1])
    assert await engine.svc.persona(key_of(world), str(world.bob.id)) == ("Rook", "")
