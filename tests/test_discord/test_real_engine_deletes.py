"""On the real engine: deleting a Discord message hides what it shows, and destroys nothing."""

from __future__ import annotations

import pytest

from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_discord.conftest import World
from tests.test_discord.real_engine import (
    Engine,
    RealStarter,
    engine,
    key_of,
    model,
    narrator_requests,
    prompt_text,
    reply_text,
    say_and_wait,
    start_playing,
    start_real,
    webhook_replies,
)

__all__ = ["engine", "model", "start_real"]
pytestmark = pytest.mark.timeout(60)


async def test_deleting_a_floors_message_hides_the_floor_and_keeps_it(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    said = []
    for n, text in enumerate(("I order mead.", "I pay in gold."), start=1):
        model.script(reply_text(f"Reply {n}."))
        said.append(
            await say_and_wait(
                fake,
                world.rp,
                world.alice,
                text,
                done=lambda n=n: len(webhook_replies(fake, world.rp.id)) == n,
            )
        )
    key = key_of(world)
    await fake.delete_by_user(said[0])
    await fake.wait_idle(quiet=0.3)
    # Hidden: the floor leaves the history, the prompt and the export...
    history = await engine.svc.history(key, "main")
    assert [(v.floor, v.text) for v in history] == [(2, "Reply 2.")]
    exported = (await engine.svc.export_chat(key, "main")).decode()
    assert "I order mead." not in exported and "I pay in gold." in exported
    model.script(reply_text("Reply 3."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Again?",
        done=lambda: len(webhook_replies(fake, world.rp.id)) == 3,
    )
    prompt = prompt_text(narrator_requests(model)[-1])
    assert "I order mead." not in prompt and "Reply 1." not in prompt
    assert "I pay in gold." in prompt
    # ...but nothing is destroyed: the message still maps to its floor, and numbering goes on.
    ref = await engine.svc.resolve_message(key, said[0]["id"])
    assert ref is not None and (ref.floor, ref.role) == (1, "user")
    assert [v.floor for v in await engine.svc.history(key, "main")] == [2, 3]
