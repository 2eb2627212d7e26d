"""On the real engine: a turn that fails is never a dead end (issue 13). The error shows where
the reply would have been (no ``…`` left behind), the input stays in the floor, and 🔄 on the
notice (or on the input) retries the floor: a real reply on a new page of the same floor, in the
notice's own message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import FakeError, FakeOpenAIServer
from tests.test_discord.conftest import World
from tests.test_discord.real_engine import (
    Engine,
    RealStarter,
    key_of,
    narrator_requests,
    reply_text,
    start_playing,
    webhook_replies,
)

pytestmark = pytest.mark.timeout(60)


def notices(fake: FakeDiscord, world: World) -> list[dict[str, Any]]:
    return [m for m in webhook_replies(fake, world.rp.id) if "no reply" in m["content"]]


def ellipses(fake: FakeDiscord, world: World) -> list[str]:
    """Webhook messages that still show only the placeholder (or the streaming cursor)."""
    return [
        m["content"]
        for m in webhook_replies(fake, world.rp.id)
        if m["content"].strip() in ("…", "") or m["content"].endswith(" …")
    ]


async def fail_a_turn(
    fake: FakeDiscord, world: World, model: FakeOpenAIServer, failure: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Alice's message meets ``failure``; returns her message and the notice shown for it."""
    model.script(failure)
    said = await fake.say(world.rp, world.alice, "Hello?")
    await fake.wait_for(lambda: notices(fake, world), what="the failure notice")
    await fake.wait_idle(quiet=0.15)
    return said, notices(fake, world)[-1]


async def retry_turns_the_notice_into_the_reply(
    fake: FakeDiscord,
    world: World,
    engine: Engine,
    model: FakeOpenAIServer,
    notice: dict[str, Any],
    reacted: dict[str, Any],
) -> None:
    view = (await engine.svc.history(key_of(world), "main"))[-1]
    assert view.failed and view.floor == 1 and "Hello?" in view.text, view
    model.script(reply_text("Sorry, I was lost in thought. Hello!"))
    await fake.react(reacted, world.alice, "🔄")
    await fake.wait_for(
        lambda: fake.messages[int(notice["id"])]["content"].startswith("Sorry, I was lost"),
        what="the notice edited into the reply",
    )
    await fake.wait_idle(quiet=0.15)
    assert notices(fake, world) == [] and ellipses(fake, world) == []
    assert len(webhook_replies(fake, world.rp.id)) == 1, "the reply is the notice's message"
    views = await engine.svc.history(key_of(world), "main")
    assert len(views) == 1, views
    retried = views[-1]
    assert (retried.floor, retried.failed) == (1, False)
    assert retried.text == "Sorry, I was lost in thought. Hello!"
    assert retried.page >= 1 and retried.pages >= 1
    # The model saw the kept input on the retry.
    assert narrator_requests(model)[-1].last_user_text.endswith("Hello?")


async def test_a_model_error_is_retried_with_a_reaction_on_the_notice(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    _, notice = await fail_a_turn(fake, world, model, FakeError(status=500))
    await retry_turns_the_notice_into_the_reply(fake, world, engine, model, notice, notice)


async def test_a_reaction_on_the_failed_floors_input_retries_it(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    said, notice = await fail_a_turn(fake, world, model, FakeError(status=500))
    await retry_turns_the_notice_into_the_reply(fake, world, engine, model, notice, said)


async def test_after_a_restart_a_reaction_on_the_input_still_retries_it(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    runner = await start_playing(fake, world, start_real)
    said, _ = await fail_a_turn(fake, world, model, FakeError(status=500))
    await runner.close()
    await engine.close()
    await engine.open()
    await start_real()
    model.script(reply_text("Back again, and listening."))
    await fake.react(said, world.alice, "🔄")
    await fake.wait_for(
        lambda: any(
            m["content"] == "Back again, and listening."
            for m in webhook_replies(fake, world.rp.id)
        ),
        what="the retried reply",
    )
    await fake.wait_idle(quiet=0.15)
    views = await engine.svc.history(key_of(world), "main")
    assert [(v.floor, v.failed) for v in views] == [(1, False)]


async def test_a_reaction_on_an_earlier_failed_floor_is_ignored(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    _, notice = await fail_a_turn(fake, world, model, FakeError(status=500))
    model.script(reply_text("Second floor."))
    await fake.say(world.rp, world.alice, "Anyone?")
    await fake.wait_for(
        lambda: any(m["content"] == "Second floor." for m in webhook_replies(fake, world.rp.id)),
        what="the second floor",
    )
    await fake.wait_idle(quiet=0.15)
    asked = len(model.chat_requests)
    await fake.react(notice, world.alice, "🔄")
    await fake.wait_idle(quiet=0.3)
    assert len(model.chat_requests) == asked, "only the latest floor is retried"
    views = await engine.svc.history(key_of(world), "main")
    assert [(v.floor, v.failed) for v in views] == [(1, True), (2, False)]


async def test_a_retry_that_fails_again_keeps_the_notice_and_can_be_retried(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    _, notice = await fail_a_turn(fake, world, model, FakeError(status=500))
    model.script(FakeError(status=503, message="still down"))
    asked = len(model.chat_requests)
    await fake.react(notice, world.alice, "🔄")
    await fake.wait_for(lambda: len(model.chat_requests) > asked, what="the first retry")
    await fake.wait_idle(quiet=0.15)
    assert [m["id"] for m in notices(fake, world)] == [notice["id"]], "the same notice"
    assert ellipses(fake, world) == []
    await retry_turns_the_notice_into_the_reply(fake, world, engine, model, notice, notice)
