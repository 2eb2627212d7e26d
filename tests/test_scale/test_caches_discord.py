"""Caches that stay true on Discord (issue 19): the bot runs on one service; a second service
on the same database (another process, the console, the web pages) stops the channel's
session, starts it again, swaps its character, sets a persona and regenerates a reply. The
bot's next message, turn and reaction follow what the database says, not its own copies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from adapters.llm import OfflineChatModel
from adapters.storage import open_storage
from engine.turns.profiles import environment_profile
from engine.turns.service import TavernService
from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_discord.conftest import (  # noqa: F401 (fixtures used by name)
    World,
    engine,
    fake,
    model,
    service,
    session_defaults,
    start_bot,
    start_real,
    world,
)
from tests.test_discord.real_engine import (
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
from tests.test_scale.caches_support import card

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
async def other(engine: Engine) -> AsyncIterator[TavernService]:  # noqa: F811
    """A second service on the bot's database, with its own storage and caches."""
    storage = await open_storage(engine.url)
    model_ = OfflineChatModel(announce=False)
    svc = TavernService(
        storage,
        model_for=lambda profile: model_,
        default_profile=environment_profile(provider="offline", base_url=None, model="offline"),
    )
    await svc.start()
    yield svc
    await svc.aclose()
    await svc.release_lease()
    await storage.close()


def _replies(fake: FakeDiscord, world: World) -> list[dict[str, Any]]:  # noqa: F811
    """The character's messages in the played channel, oldest first."""
    return webhook_replies(fake, world.rp.id)


async def test_the_bot_follows_changes_made_through_another_service(
    fake: FakeDiscord,  # noqa: F811
    world: World,  # noqa: F811
    start_real: RealStarter,  # noqa: F811
    model: FakeOpenAIServer,  # noqa: F811
    other: TavernService,
) -> None:
    await start_playing(fake, world, start_real)
    key = key_of(world)
    model.script(reply_text("Welcome in."))
    await say_and_wait(fake, world.rp, world.alice, "Hello!", done=lambda: _replies(fake, world))
    asked = len(narrator_requests(model))

    # Stopped elsewhere: the bot's next message in the channel is not answered.
    await other.close_session(key)
    await fake.say(world.rp, world.alice, "Anyone here?")
    await fake.wait_idle(quiet=0.5)
    assert len(_replies(fake, world)) == 1
    assert len(narrator_requests(model)) == asked

    # Started again with another character and a persona, both set elsewhere.
    await other.open_session(key)
    await other.import_asset(key, "card", "Kael.json", card("Kael", "reads the stars"))
    await other.set_persona(key, str(world.alice.id), "Lyra", "a travelling bard")
    model.script(reply_text("The stars say hello."))
    await say_and_wait(
        fake, world.rp, world.alice, "Back again.", done=lambda: len(_replies(fake, world)) == 2
    )
    latest = _replies(fake, world)[-1]
    assert latest["author"]["username"] == "Kael"
    sent = prompt_text(narrator_requests(model)[-1])
    assert "reads the stars" in sent and "a travelling bard" in sent
    view = (await other.history(key, "main"))[-1]
    assert view.inputs == (("Lyra", "Back again."),)

    # The reply regenerated elsewhere: a reaction on the bot's message pages from the
    # pages the database holds (the offline model wrote page 2).
    await other.regenerate(key, "main")
    await fake.react(latest, world.alice, "◀️")
    await fake.wait_for(
        lambda: "‹ 1/2 ›" in _replies(fake, world)[-1]["content"], what="page 1 of 2"
    )
    assert _replies(fake, world)[-1]["content"].startswith("The stars say hello.")
