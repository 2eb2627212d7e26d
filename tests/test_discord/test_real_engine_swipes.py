"""On the real engine: 🔄 ◀️ ▶️ change the reply and the variables as the active page says
(DESIGN.md section 3), reactions without the right are ignored, and threads are branches
stored in the database."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.discord.convert import session_key
from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_discord.conftest import World
from tests.test_discord.real_engine import (
    Engine,
    RealStarter,
    key_of,
    narrator_requests,
    reply_text,
    say_and_wait,
    set_var,
    start_playing,
    webhook_replies,
)

pytestmark = pytest.mark.timeout(60)


def _latest(fake: FakeDiscord, world: World) -> dict[str, Any]:
    return webhook_replies(fake, world.rp.id)[-1]


async def _mood(fake: FakeDiscord, world: World, channel: Any = None) -> str:
    record = await fake.slash(channel or world.rp, world.carol, "vars get", name="mood")
    return record.text


async def _with_tools(engine: Engine, world: World) -> None:
    await engine.svc.configure(key_of(world), tools={"enabled": True})


async def test_regenerate_and_swipes_change_the_reply_and_the_variables(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    await _with_tools(engine, world)
    model.script(set_var("mood", "calm"), reply_text("She smiles calmly."))
    await say_and_wait(
        fake, world.rp, world.alice, "Hello!", done=lambda: webhook_replies(fake, world.rp.id)
    )
    reply = _latest(fake, world)
    assert reply["content"] == "She smiles calmly."
    assert await _mood(fake, world) == "`mood` = calm"

    model.script(set_var("mood", "stormy"), reply_text("Thunder rolls in her voice."))
    await fake.react(reply, world.alice, "🔄")
    await fake.wait_for(lambda: "‹ 2/2 ›" in _latest(fake, world)["content"], what="page 2")
    await fake.wait_idle(quiet=0.15)
    assert _latest(fake, world)["id"] == reply["id"], "the same message is edited"
    assert _latest(fake, world)["content"].startswith("Thunder rolls in her voice.")
    assert await _mood(fake, world) == "`mood` = stormy"

    await fake.react(reply, world.alice, "◀️")
    await fake.wait_for(lambda: "‹ 1/2 ›" in _latest(fake, world)["content"], what="page 1")
    await fake.wait_idle(quiet=0.15)
    assert _latest(fake, world)["content"].startswith("She smiles calmly.")
    assert await _mood(fake, world) == "`mood` = calm"
    history = await fake.slash(world.rp, world.carol, "vars history", name="mood")
    assert "calm" in history.text

    await fake.react(reply, world.alice, "▶️")
    await fake.wait_for(lambda: "‹ 2/2 ›" in _latest(fake, world)["content"], what="page 2 again")
    await fake.wait_idle(quiet=0.15)
    assert await _mood(fake, world) == "`mood` = stormy"
    view = (await engine.svc.history(key_of(world), "main"))[-1]
    assert (view.floor, view.page, view.pages) == (1, 2, 2)
    # The next turn builds on the active page: the model sees its reply, not the other one.
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "And now?",
        done=lambda: len(webhook_replies(fake, world.rp.id)) == 2,
    )
    messages = [str(m.get("content")) for m in narrator_requests(model)[-1].messages]
    assert "Thunder rolls in her voice." in messages and "She smiles calmly." not in messages


async def test_a_reaction_without_the_right_is_ignored(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    model.script(reply_text("Only for Alice."))
    await say_and_wait(
        fake, world.rp, world.alice, "Hi!", done=lambda: webhook_replies(fake, world.rp.id)
    )
    reply = _latest(fake, world)
    asked = len(model.chat_requests)
    await fake.react(reply, world.bob, "🔄")
    await fake.react(reply, world.bob, "◀️")
    await fake.wait_for(
        lambda: len([r for r in fake.reactions if r[2] == world.bob.id and r[3] == "remove"]) == 2,
        what="bob's reactions removed",
    )
    await fake.wait_idle(quiet=0.2)
    assert len(model.chat_requests) == asked, "no generation for a refused reaction"
    assert _latest(fake, world)["content"] == "Only for Alice."
    view = (await engine.svc.history(key_of(world), "main"))[-1]
    assert (view.page, view.pages) == (1, 1)
    # A moderator (Manage Messages) may regenerate.
    model.script(reply_text("The moderator's take."))
    await fake.react(reply, world.mod, "🔄")
    await fake.wait_for(lambda: "‹ 2/2 ›" in _latest(fake, world)["content"], what="mod regen")


async def test_a_thread_from_the_second_reply_is_a_branch_after_floor_two(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    await _with_tools(engine, world)
    for n, mood in enumerate(("calm", "wary", "angry"), start=1):
        model.script(set_var("mood", mood), reply_text(f"Main {n}."))
        await say_and_wait(
            fake,
            world.rp,
            world.alice,
            f"line {n}",
            done=lambda n=n: len(webhook_replies(fake, world.rp.id)) == n,
        )
    second = webhook_replies(fake, world.rp.id)[1]
    assert second["content"] == "Main 2."
    thread = await fake.start_thread(world.rp, world.bob, "what if", from_message=second)
    model.script(set_var("mood", "curious"), reply_text("Thread 3."))
    await say_and_wait(
        fake, thread, world.bob, "in the thread", done=lambda: webhook_replies(fake, thread.id)
    )
    key = key_of(world)
    svc = engine.svc
    branch = str(thread.id)
    info = {b.name: b for b in (await svc.session_info(key)).branches}
    assert (info[branch].parent, info[branch].fork_floor) == ("main", 2)
    thread_view = await svc.history(key, branch)
    assert [(v.floor, v.text) for v in thread_view] == [
        (1, "Main 1."),
        (2, "Main 2."),
        (3, "Thread 3."),
    ]
    assert (await svc.variables(key, branch))["mood"] == "curious"
    # The thread saw floor 2's state, not floor 3's of the main channel.
    writes = [w.value for w in await svc.variable_history(key, branch, "mood")]
    assert "angry" not in writes and writes[-1] == "curious"
    # The main channel is unaffected.
    main_view = await svc.history(key, "main")
    assert [v.text for v in main_view] == ["Main 1.", "Main 2.", "Main 3."]
    assert (await svc.variables(key, "main"))["mood"] == "angry"
    assert webhook_replies(fake, thread.id)[0]["content"] == "Thread 3."
    assert len(webhook_replies(fake, world.rp.id)) == 3
    # The thread's prompt holds floors 1 and 2 but not the main channel's floor 3.
    prompt = [str(m.get("content")) for m in narrator_requests(model)[-1].messages]
    assert "Main 2." in prompt and "Main 3." not in prompt and "line 3" not in prompt
    # /vars inside the thread shows the branch.
    assert await _mood(fake, world, thread) == "`mood` = curious"
    assert session_key(world.guild.id, world.rp.id) == key
