"""Every character speaks with its own avatar (issue 17), through discord.py and the loopback
fake on the real engine: a character whose card is a PNG speaks through a webhook of its own,
named after it, whose avatar is the card's picture (discord.py uploads it as a data URI); a
JSON card without a picture posts through the channel's shared webhook as before; a picture
over ``MAX_AVATAR_BYTES`` is left out with a warning, never the reply."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from adapters.discord.avatars import MAX_AVATAR_BYTES
from tests.fakes.discord import FakeDiscord
from tests.fakes.discord.world import Webhook
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.pictures import picture, png_card
from tests.test_discord.conftest import World
from tests.test_discord.group_support import FINN, MIRA, said
from tests.test_discord.real_engine import (
    CARD_NAME,
    Engine,
    RealStarter,
    key_of,
    reply_text,
    say_and_wait,
    start_playing,
    webhook_replies,
)

pytestmark = pytest.mark.timeout(90)

MIRA_PICTURE = picture((200, 30, 30, 255))
FINN_PICTURE = picture((30, 30, 200, 255))
SHARED_NAME = "tavernbot"  # the adapter's default shared webhook name


def _hook_of(fake: FakeDiscord, message: dict[str, Any]) -> Webhook:
    """The webhook that posted ``message``."""
    return fake.webhooks[int(message["webhook_id"])]


async def _import_png(fake: FakeDiscord, world: World, name: str, image: bytes) -> None:
    text = {"Mira": MIRA, "Finn": FINN}.get(name, f"{name} is here.")
    file = (f"{name.lower()}.png", png_card(name, text, image))
    record = await fake.slash(world.other, world.gm, "character import", file=file)
    assert f"Imported card **{name}**" in record.text, record.text


async def test_each_group_member_speaks_through_a_webhook_wearing_its_picture(
    fake: FakeDiscord, world: World, start_real: RealStarter, model: FakeOpenAIServer
) -> None:
    await start_real()
    await _import_png(fake, world, "Mira", MIRA_PICTURE)
    await _import_png(fake, world, "Finn", FINN_PICTURE)
    record = await fake.slash(
        world.rp, world.gm, "tavern start", character="Mira", character2="Finn"
    )
    assert "**Mira** and **Finn** play here now" in record.text, record.text

    model.script(reply_text("Aye, the tide turns."), reply_text("Then we wait."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Finn and Mira, shall we sail?",
        done=lambda: len(said(fake, world.rp.id)) == 2,
    )
    finn, mira = webhook_replies(fake, world.rp.id)
    assert (finn["content"], mira["content"]) == ("Aye, the tide turns.", "Then we wait.")
    finn_hook, mira_hook = _hook_of(fake, finn), _hook_of(fake, mira)
    assert (finn_hook.name, mira_hook.name) == ("Finn", "Mira")
    assert finn_hook.avatar is not None and finn_hook.avatar.startswith("data:image/png;base64,")
    assert finn_hook.avatar_bytes() == FINN_PICTURE
    assert mira_hook.avatar_bytes() == MIRA_PICTURE
    # Each message shows its webhook's avatar (no avatar URL over it).
    assert mira["author"]["avatar"] == mira_hook.avatar_hash
    assert mira["avatar_url"] is None
    # No shared webhook was needed: every speaker has a picture.
    assert sorted(h.name for h in fake.webhooks.values()) == ["Finn", "Mira"]

    # The next turn goes through the same webhooks, neither created nor edited again.
    calls = len(fake.calls)
    model.script(reply_text("The lamp is lit."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Mira, the lamp?",
        done=lambda: len(said(fake, world.rp.id)) == 3,
    )
    assert _hook_of(fake, webhook_replies(fake, world.rp.id)[-1]).id == mira_hook.id
    webhook_calls = [
        c for c in fake.calls[calls:] if c.method in ("POST", "PATCH") and "/webhooks" in c.path
    ]
    assert all(c.path.startswith(f"/webhooks/{mira_hook.id}/") for c in webhook_calls)


async def test_a_solo_png_character_wears_its_picture_and_a_json_card_uses_the_shared_webhook(
    fake: FakeDiscord, world: World, start_real: RealStarter, model: FakeOpenAIServer
) -> None:
    await start_playing(fake, world, start_real)  # Aqua, a JSON card, in #rp
    model.script(reply_text("Welcome, traveller."))
    await say_and_wait(
        fake, world.rp, world.alice, "Hello!", done=lambda: webhook_replies(fake, world.rp.id)
    )
    aqua = webhook_replies(fake, world.rp.id)[-1]
    assert aqua["author"]["username"] == CARD_NAME
    assert _hook_of(fake, aqua).name == SHARED_NAME
    assert _hook_of(fake, aqua).avatar is None

    # A PNG card played alone, in a channel of its own.
    await _import_png(fake, world, "Mira", MIRA_PICTURE)
    record = await fake.slash(world.other, world.gm, "tavern start", character="Mira")
    assert "**Mira** plays here now" in record.text, record.text
    model.script(reply_text("The lamp is lit."))
    await say_and_wait(
        fake,
        world.other,
        world.alice,
        "Evening, Mira.",
        done=lambda: webhook_replies(fake, world.other.id),
    )
    mira = webhook_replies(fake, world.other.id)[-1]
    assert (mira["author"]["username"], mira["content"]) == ("Mira", "The lamp is lit.")
    assert _hook_of(fake, mira).name == "Mira"
    assert _hook_of(fake, mira).avatar_bytes() == MIRA_PICTURE


async def test_a_deleted_character_webhook_is_made_again_with_the_picture(
    fake: FakeDiscord, world: World, start_real: RealStarter, model: FakeOpenAIServer
) -> None:
    await start_real()
    await _import_png(fake, world, "Mira", MIRA_PICTURE)
    await fake.slash(world.rp, world.gm, "tavern start", character="Mira")
    model.script(reply_text("One."), reply_text("Two."))
    await say_and_wait(
        fake, world.rp, world.alice, "Hi.", done=lambda: webhook_replies(fake, world.rp.id)
    )
    first = _hook_of(fake, webhook_replies(fake, world.rp.id)[-1])
    await fake.delete_webhook(first.id)
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Still there?",
        done=lambda: len(webhook_replies(fake, world.rp.id)) == 2,
    )
    second = webhook_replies(fake, world.rp.id)[-1]
    assert second["content"] == "Two."
    again = _hook_of(fake, second)
    assert again.id != first.id
    assert (again.name, again.avatar_bytes()) == ("Mira", MIRA_PICTURE)


async def test_after_a_restart_a_reaction_edits_the_reply_through_its_own_webhook(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    runner = await start_real()
    await _import_png(fake, world, "Mira", MIRA_PICTURE)
    await fake.slash(world.rp, world.gm, "tavern start", character="Mira")
    model.script(reply_text("First take."))
    await say_and_wait(
        fake, world.rp, world.alice, "A song!", done=lambda: webhook_replies(fake, world.rp.id)
    )
    reply = webhook_replies(fake, world.rp.id)[-1]
    hook = _hook_of(fake, reply)
    await runner.close()
    await engine.close()
    await engine.open()
    await start_real()

    model.script(reply_text("Second take."))
    await fake.react(reply, world.alice, "🔄")
    await fake.wait_for(
        lambda: "‹ 2/2 ›" in webhook_replies(fake, world.rp.id)[-1]["content"], what="page 2"
    )
    # The same message, edited through the webhook that posted it (found again by name).
    replies = webhook_replies(fake, world.rp.id)
    assert [m["id"] for m in replies] == [reply["id"]]
    assert list(fake.webhooks) == [hook.id]
    assert hook.avatar_bytes() == MIRA_PICTURE


async def test_a_picture_over_the_avatar_limit_is_left_out_not_the_reply(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Too large for a Discord attachment as well: imported through the service.
    big = picture((1, 2, 3, 255), filler=MAX_AVATAR_BYTES)
    assert len(big) > MAX_AVATAR_BYTES
    key = key_of(world)
    await engine.svc.open_session(key)
    await engine.svc.import_asset(key, "card", "big.png", png_card("Big", "Huge.", big))
    assert await engine.svc.character_picture(key, "Big") == big
    await start_real()
    model.script(reply_text("Still here."), reply_text("And again."))
    with caplog.at_level(logging.WARNING, logger="adapters.discord.avatars"):
        for n, text in enumerate(("Hello?", "Hello again?"), start=1):
            await say_and_wait(
                fake,
                world.rp,
                world.alice,
                text,
                done=lambda n=n: len(webhook_replies(fake, world.rp.id)) == n,
            )
    replies = webhook_replies(fake, world.rp.id)
    assert [(m["author"]["username"], m["content"]) for m in replies] == [
        ("Big", "Still here."),
        ("Big", "And again."),
    ]
    assert [h.name for h in fake.webhooks.values()] == [SHARED_NAME]
    assert _hook_of(fake, replies[0]).avatar is None
    warnings = [r.getMessage() for r in caplog.records if "MAX_AVATAR_BYTES" in r.getMessage()]
    assert len(warnings) == 1, warnings  # said once, not at every reply
    assert "Big" in warnings[0]
