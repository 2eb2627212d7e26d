"""On the real engine with the configuration's own session defaults (issue 13): a new session
plays ``compat_plus`` with memory on and tools off, so its dry run shows the memory block built
from earlier summaries and no model request offers tools; ``/session set`` (or ``[session]
tools = true``) turns tools on, and the model's ``set_variable`` follows the pages; the settings
belong to one session; an empty completion is an error in place that 🔄 retries."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.turns.options import SessionDefaults
from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_discord.conftest import World
from tests.test_discord.real_engine import (
    CARD_NAME,
    Engine,
    RealStarter,
    agent_requests,
    key_of,
    narrator_requests,
    reply_text,
    say_and_wait,
    set_var,
    start_playing,
    webhook_replies,
)
from tests.test_discord.test_real_engine_failures import (
    ellipses,
    fail_a_turn,
    notices,
    retry_turns_the_notice_into_the_reply,
)

pytestmark = pytest.mark.timeout(60)
WELL = "The well? Stay away. <summary>Aqua warned Alice about the cursed well.</summary>"


@pytest.fixture
def session_defaults() -> SessionDefaults:
    """The configuration's own defaults (``[session]`` left out of the config)."""
    return SessionDefaults()


async def _turn(
    fake: FakeDiscord,
    world: World,
    engine: Engine,
    text: str,
    *,
    replies: int,
    channel: Any = None,
) -> None:
    """Alice says ``text``; wait for the reply and for the memory work after it."""
    where = channel or world.rp
    await say_and_wait(
        fake,
        where,
        world.alice,
        text,
        done=lambda: len(webhook_replies(fake, where.id)) == replies,
    )
    await engine.svc.drain(10.0)


async def _mood(fake: FakeDiscord, world: World) -> str:
    return (await fake.slash(world.rp, world.carol, "vars get", name="mood")).text


async def test_a_new_sessions_dry_run_shows_the_memory_of_earlier_summaries_and_no_tools(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    info = await fake.slash(world.rp, world.carol, "session info")
    assert "mode `compat_plus` · tools `off` · memory `on`" in info.text, info.text
    # The memory agent answers no JSON here, so the reply's <summary> tag is what is kept.
    model.script(reply_text(WELL), FakeReply(text="not json"))
    await _turn(fake, world, engine, "What about the well?", replies=1)
    assert "<summary>" not in webhook_replies(fake, world.rp.id)[0]["content"]
    assert len(agent_requests(model)) == 1, "memory is on: the agent ran after the turn"

    dry = await fake.slash(world.rp, world.alice, "dryrun", text="Tell me about the well.")
    assert "memory block: yes" in dry.text and "tools offered: none" in dry.text, dry.text
    found = json.loads(dry.files[0][1])
    assert found["mode"] == "compat_plus" and found["tools"] == []
    block = [m for m in found["messages"] if m.get("identifier") == "memory"]
    assert len(block) == 1 and "cursed well" in block[0]["content"], found["messages"]

    model.script(reply_text("I told you: the well is cursed."))
    await _turn(fake, world, engine, "Tell me about the well.", replies=2)
    sent = narrator_requests(model)[-1]
    assert any("cursed well" in str(m.get("content")) for m in sent.messages[:-1])
    assert all("tools" not in r.body for r in model.chat_requests), "no request offers tools"


async def _swipes_follow_the_mood(
    fake: FakeDiscord, world: World, engine: Engine, model: FakeOpenAIServer
) -> None:
    """set_variable on page 1 and page 2 (🔄), and ◀️ brings page 1's value back."""
    model.script(set_var("mood", "calm"), reply_text("She smiles calmly."))
    await _turn(fake, world, engine, "Hello!", replies=1)
    tools = narrator_requests(model)[0].body.get("tools") or []
    assert "set_variable" in [t["function"]["name"] for t in tools]
    reply = webhook_replies(fake, world.rp.id)[-1]
    assert reply["content"] == "She smiles calmly."
    assert await _mood(fake, world) == "`mood` = calm"

    def latest() -> str:
        return str(webhook_replies(fake, world.rp.id)[-1]["content"])

    model.script(set_var("mood", "stormy"), reply_text("Thunder rolls in her voice."))
    await fake.react(reply, world.alice, "🔄")
    await fake.wait_for(lambda: "‹ 2/2 ›" in latest(), what="page 2")
    await fake.wait_idle(quiet=0.15)
    await engine.svc.drain(10.0)
    assert latest().startswith("Thunder rolls in her voice.")
    assert await _mood(fake, world) == "`mood` = stormy"

    await fake.react(reply, world.alice, "◀️")
    await fake.wait_for(lambda: "‹ 1/2 ›" in latest(), what="page 1")
    await fake.wait_idle(quiet=0.15)
    assert latest().startswith("She smiles calmly.")
    assert await _mood(fake, world) == "`mood` = calm"
    listed = await fake.slash(world.rp, world.carol, "vars list")
    assert "`mood` = calm" in listed.text, listed.text
    view = (await engine.svc.history(key_of(world), "main"))[-1]
    assert (view.floor, view.page, view.pages) == (1, 1, 2)


async def test_tools_switched_on_with_session_set_follow_the_pages(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    done = await fake.slash(world.rp, world.gm, "session set", option="tools", value="on")
    assert done.text == "Set. This session's **tools** is now `on`." and done.ephemeral
    await _swipes_follow_the_mood(fake, world, engine, model)


async def test_tools_on_in_the_session_defaults_follow_the_pages(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    # [session] tools = true: the engine starts with it; the new session takes it.
    await engine.close()
    engine.defaults = SessionDefaults(tools=True)
    await engine.open()
    await start_playing(fake, world, start_real)
    info = await fake.slash(world.rp, world.carol, "session info")
    assert "tools `on`" in info.text, info.text
    await _swipes_follow_the_mood(fake, world, engine, model)


async def test_session_set_changes_one_session_only_and_players_are_refused(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    record = await fake.slash(world.other, world.gm, "tavern start", character=CARD_NAME)
    assert "plays here now" in record.text, record.text
    refused = await fake.slash(world.rp, world.alice, "session set", option="tools", value="on")
    assert refused.text.startswith("⛔ You need the **Game Master** role"), refused.text
    for option, value in (("mode", "compat_strict"), ("tools", "on"), ("memory", "off")):
        done = await fake.slash(world.rp, world.gm, "session set", option=option, value=value)
        assert done.text == f"Set. This session's **{option}** is now `{value}`.", done.text
    here = await engine.svc.session_info(key_of(world))
    there = await engine.svc.session_info(key_of(world, channel=world.other.id))
    assert (here.prompt_mode, here.tools, here.memory) == ("compat_strict", True, False)
    assert (there.prompt_mode, there.tools, there.memory) == ("compat_plus", False, True)

    model.script(reply_text("Here, tools and no memory."))
    await _turn(fake, world, engine, "In #rp.", replies=1)
    assert "tools" in narrator_requests(model)[-1].body
    assert agent_requests(model) == [], "memory off: no memory agent after the turn"

    model.script(reply_text("There, the defaults."))
    await _turn(fake, world, engine, "In #other.", replies=1, channel=world.other)
    assert "tools" not in narrator_requests(model)[-1].body
    assert len(agent_requests(model)) == 1, "memory on in #other: the agent ran"

    here_dry = await fake.slash(world.rp, world.alice, "dryrun", text="probe")
    there_dry = await fake.slash(world.other, world.alice, "dryrun", text="probe")
    assert json.loads(here_dry.files[0][1])["mode"] == "compat_strict"
    assert "tools offered: get_variable, set_variable" in here_dry.text, here_dry.text
    assert json.loads(there_dry.files[0][1])["mode"] == "compat_plus"
    assert "tools offered: none" in there_dry.text, there_dry.text
    info = await fake.slash(world.other, world.carol, "session info")
    assert "mode `compat_plus` · tools `off` · memory `on`" in info.text, info.text


async def test_an_empty_completion_shows_an_error_and_a_retry_gives_the_reply(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    _, notice = await fail_a_turn(fake, world, model, FakeReply(text=""))
    assert notice["content"] == "*(no reply: the model returned no text)*"
    assert ellipses(fake, world) == [], "no placeholder is left behind"
    await retry_turns_the_notice_into_the_reply(fake, world, engine, model, notice, notice)


async def test_a_whitespace_completion_streamed_as_a_placeholder_is_replaced(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    said, notice = await fail_a_turn(fake, world, model, FakeReply(text=" \n \n  ", chunk_chars=1))
    assert "the model returned no text" in notice["content"]
    assert ellipses(fake, world) == [] and len(notices(fake, world)) == 1
    await retry_turns_the_notice_into_the_reply(fake, world, engine, model, notice, said)


async def test_a_tool_call_that_was_not_offered_is_no_reply_and_never_runs(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    _, notice = await fail_a_turn(fake, world, model, set_var("mood", "sneaky"))
    assert "the model returned no text" in notice["content"]
    assert ellipses(fake, world) == []
    assert "`mood` is not set" in await _mood(fake, world)
