"""On the real engine: a new chat opens with the card's greeting, as SillyTavern's does.

``/tavern start`` (and ``/character set`` on a channel with no message yet) posts the card's
first message as the character, stored as floor 1 so the dry run, the first turn's prompt and
the swipe reactions all see the same greeting; once only, across a second start and a restart;
nothing for a card without one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.fakes.discord import FakeDiscord
from tests.fakes.discord.world import MEMBER_DEFAULT
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_discord.conftest import World, build_world
from tests.test_discord.real_engine import (
    CARD_NAME,
    Engine,
    RealStarter,
    import_card,
    key_of,
    narrator_requests,
    prompt_text,
    reply_text,
    say_and_wait,
    webhook_replies,
)

pytestmark = pytest.mark.timeout(60)

GREETING = "The fire crackles. Welcome, {{user}}!"
ALTERNATE = "Back again, {{user}}?"
MIRA = (
    "mira.json",
    json.dumps(
        {
            "spec": "chara_card_v2",
            "spec_version": "2.0",
            "data": {
                "name": "Mira",
                "description": "An innkeeper.",
                "first_mes": GREETING,
                "alternate_greetings": [ALTERNATE],
            },
        }
    ).encode(),
)


async def _import_mira(fake: FakeDiscord, world: World) -> None:
    record = await fake.slash(world.other, world.gm, "character import", file=MIRA)
    assert "Imported card **Mira**" in record.text, record.text


async def _start(fake: FakeDiscord, world: World, character: str = "Mira") -> None:
    record = await fake.slash(world.rp, world.gm, "tavern start", character=character)
    assert f"**{character}** plays here now" in record.text, record.text
    await fake.wait_idle()


async def _greeting(fake: FakeDiscord, world: World) -> dict[str, Any]:
    """The greeting's webhook message once it is posted whole (see :func:`_whole`)."""
    return (await _whole(fake, lambda: webhook_replies(fake, world.rp.id)))[0]


async def _whole(
    fake: FakeDiscord, messages: Callable[[], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """``messages()`` once one of them shows the greeting's page counter: the bot may still be
    posting the greeting when the command's answer is in and the fake has gone quiet."""
    await fake.wait_for(
        lambda: [m for m in messages() if "‹ 1/2 ›" in m["content"]],
        what="the greeting with its page counter",
    )
    return messages()


def _count(haystack: list[dict[str, Any]], text: str) -> int:
    return sum(str(m.get("content")).count(text) for m in haystack)


async def test_tavern_start_posts_the_greeting_as_the_character_once(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_real()
    await _import_mira(fake, world)
    await _start(fake, world)
    posted = await _whole(fake, lambda: webhook_replies(fake, world.rp.id))
    assert len(posted) == 1, posted
    # As the character (its webhook name), {{user}} as the one who opened the chat, with the
    # page marker of its alternate greeting.
    assert posted[0]["author"]["username"] == "Mira"
    assert posted[0]["content"] == "The fire crackles. Welcome, Gwen!\n-# ‹ 1/2 ›"
    # Stored as floor 1 and linked to its message.
    history = await engine.svc.history(key_of(world), "main")
    assert [(v.floor, v.pages) for v in history] == [(1, 2)]
    ref = await engine.svc.resolve_message(key_of(world), posted[0]["id"])
    assert ref is not None and (ref.floor, ref.role) == (1, "assistant")

    dry = await fake.slash(world.rp, world.alice, "dryrun", text="probe")
    messages = json.loads(dry.files[0][1])["messages"]
    assert _count(messages, "The fire crackles.") == 1, messages

    model.script(reply_text("She pours you a drink."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Hello!",
        done=lambda: len(webhook_replies(fake, world.rp.id)) > 1,
    )
    sent = narrator_requests(model)
    assert len(sent) == 1
    assert prompt_text(sent[0]).count("The fire crackles.") == 1, prompt_text(sent[0])
    assert [v.floor for v in await engine.svc.history(key_of(world), "main")] == [1, 2]

    # Starting again on a begun chat greets no one.
    await _start(fake, world)
    assert len(webhook_replies(fake, world.rp.id)) == 2


async def test_a_second_start_and_a_restart_do_not_greet_again(
    fake: FakeDiscord, world: World, start_real: RealStarter, engine: Engine
) -> None:
    runner = await start_real()
    await _import_mira(fake, world)
    await _start(fake, world)
    await _greeting(fake, world)  # the first start's greeting is in before the second start
    await _start(fake, world)
    assert len(webhook_replies(fake, world.rp.id)) == 1
    await runner.close()
    await engine.close()
    await engine.open()
    await start_real()
    await _start(fake, world)
    assert len(webhook_replies(fake, world.rp.id)) == 1
    assert [v.floor for v in await engine.svc.history(key_of(world), "main")] == [1]


async def test_a_card_without_a_greeting_posts_nothing(
    fake: FakeDiscord, world: World, start_real: RealStarter, engine: Engine
) -> None:
    await start_real()
    await import_card(fake, world, world.other)
    await _start(fake, world, CARD_NAME)
    assert webhook_replies(fake, world.rp.id) == []
    assert fake.sent_in(world.rp) == []
    assert await engine.svc.history(key_of(world), "main") == []


async def test_swipe_reactions_on_the_greeting_show_its_alternate(
    fake: FakeDiscord, world: World, start_real: RealStarter
) -> None:
    await start_real()
    await _import_mira(fake, world)
    await _start(fake, world)
    greeting = await _greeting(fake, world)
    await fake.react(greeting, world.gm, "▶️")
    await fake.wait_for(
        lambda: webhook_replies(fake, world.rp.id)[0]["content"].startswith("Back again, Gwen?"),
        what="the alternate greeting",
    )
    assert webhook_replies(fake, world.rp.id)[0]["content"] == "Back again, Gwen?\n-# ‹ 2/2 ›"


async def test_character_set_greets_a_new_chat_but_not_a_begun_one(
    fake: FakeDiscord, world: World, start_real: RealStarter, model: FakeOpenAIServer
) -> None:
    await start_real()
    await import_card(fake, world, world.other)
    await _import_mira(fake, world)
    await _start(fake, world, CARD_NAME)  # no greeting: the chat is still empty
    record = await fake.slash(world.rp, world.gm, "character set", name="Mira")
    assert "**Mira** plays here now" in record.text, record.text
    await fake.wait_for(lambda: webhook_replies(fake, world.rp.id), what="the greeting")
    assert webhook_replies(fake, world.rp.id)[0]["content"].startswith("The fire crackles.")

    # In a channel whose chat has begun, a new character greets no one.
    await fake.slash(world.other, world.gm, "tavern start", character=CARD_NAME)
    model.script(reply_text("Hm."))
    await say_and_wait(
        fake, world.other, world.alice, "Hi.", done=lambda: webhook_replies(fake, world.other.id)
    )
    await fake.slash(world.other, world.gm, "character set", name="Mira")
    await fake.wait_idle()
    assert [m["content"] for m in webhook_replies(fake, world.other.id)] == ["Hm."]


async def test_without_webhooks_the_bot_posts_the_greeting_under_the_name(
    fake: FakeDiscord, start_real: RealStarter
) -> None:
    world = build_world(fake, bot_permissions=MEMBER_DEFAULT)
    await start_real()
    await _import_mira(fake, world)
    await _start(fake, world)
    sent = await _whole(fake, lambda: fake.sent_in(world.rp))
    assert [m["content"] for m in sent] == [
        "**Mira**\nThe fire crackles. Welcome, Gwen!\n-# ‹ 1/2 ›"
    ]
    assert fake.webhooks == {}


async def test_after_a_restart_the_greetings_message_still_finds_its_floor(
    fake: FakeDiscord, world: World, start_real: RealStarter, engine: Engine
) -> None:
    runner = await start_real()
    await _import_mira(fake, world)
    await _start(fake, world)
    greeting = await _greeting(fake, world)
    await runner.close()
    await engine.close()
    await engine.open()
    await start_real()
    # The floor has no speaker of its own: a member with Manage Messages may swipe it.
    await fake.react(greeting, world.mod, "▶️")
    await fake.wait_for(
        lambda: webhook_replies(fake, world.rp.id)[0]["content"].startswith("Back again"),
        what="the alternate greeting after the restart",
    )
    assert webhook_replies(fake, world.rp.id)[0]["content"] == "Back again, Gwen?\n-# ‹ 2/2 ›"
    history = await engine.svc.history(key_of(world), "main")
    assert [(v.floor, v.page, v.pages) for v in history] == [(1, 2, 2)]
