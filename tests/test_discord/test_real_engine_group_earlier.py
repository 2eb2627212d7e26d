"""🔄 ◀️ on an earlier member's reply of the latest group turn on Discord (issue 17), through
discord.py and the loopback fake on the real engine: Finn answered, then Mira (the latest);
🔄 on Finn's message regenerates his reply alone, edited in place under his name, ◀️ brings
back his first page and its variables; once a user's message came after, the reaction does
nothing."""

from __future__ import annotations

import pytest

from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_discord.conftest import World
from tests.test_discord.group_support import FINN, MIRA, said, start_group
from tests.test_discord.real_engine import (
    Engine,
    RealStarter,
    key_of,
    narrator_requests,
    prompt_text,
    reply_text,
    say_and_wait,
    set_var,
    webhook_replies,
)

pytestmark = pytest.mark.timeout(90)


async def _var(fake: FakeDiscord, world: World, name: str) -> str:
    return (await fake.slash(world.rp, world.carol, "vars get", name=name)).text


async def test_reactions_on_an_earlier_members_reply_change_that_reply_only(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_group(fake, world, start_real)
    await engine.svc.configure(key_of(world), tools={"enabled": True})
    model.script(
        set_var("mood", "calm"),
        reply_text("Finn 1."),
        set_var("tide", "high"),
        reply_text("Mira 1."),
    )
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Finn and Mira, report.",
        done=lambda: len(said(fake, world.rp.id)) == 2,
    )
    finn, mira = webhook_replies(fake, world.rp.id)

    def content(message: dict[str, object]) -> str:
        return str(fake.messages[int(str(message["id"]))]["content"])

    model.script(set_var("mood", "stormy"), reply_text("Finn 2."))
    await fake.react(finn, world.alice, "🔄")
    await fake.wait_for(lambda: "‹ 2/2 ›" in content(finn), what="Finn's page 2")
    await fake.wait_idle(quiet=0.15)
    assert content(finn).startswith("Finn 2.")
    assert content(mira) == "Mira 1."  # the latest reply unchanged
    assert said(fake, world.rp.id) == [("Finn", "Finn 2.\n-# ‹ 2/2 ›"), ("Mira", "Mira 1.")]
    # Finn's prompt is the story up to his floor: his card, not Mira's later reply.
    regenerated = prompt_text(narrator_requests(model)[-2])
    assert FINN in regenerated and MIRA not in regenerated and "Mira 1." not in regenerated
    assert await _var(fake, world, "mood") == "`mood` = stormy"
    assert await _var(fake, world, "tide") == "`tide` = high"  # Mira's later write stays

    await fake.react(finn, world.alice, "◀️")
    await fake.wait_for(lambda: "‹ 1/2 ›" in content(finn), what="Finn's page 1")
    await fake.wait_idle(quiet=0.15)
    assert content(finn).startswith("Finn 1.") and content(mira) == "Mira 1."
    assert await _var(fake, world, "mood") == "`mood` = calm"
    assert await _var(fake, world, "tide") == "`tide` = high"
    history = await engine.svc.history(key_of(world), "main")
    assert [(h.character, h.text, h.page, h.pages) for h in history] == [
        ("Finn", "Finn 1.", 1, 2),
        ("Mira", "Mira 1.", 1, 1),
    ]

    # The model fails halfway through a new page: Finn's message shows his page 1 again.
    model.script(FakeReply(text="Finn half way there.", chunk_chars=5, error_after_chunks=2))
    asked = len(model.chat_requests)
    await fake.react(finn, world.alice, "🔄")
    await fake.wait_for(lambda: len(model.chat_requests) == asked + 1, what="the failed page")
    await fake.wait_idle(quiet=0.3)
    assert content(finn) == "Finn 1.\n-# ‹ 1/2 ›" and content(mira) == "Mira 1."
    assert [h.pages for h in await engine.svc.history(key_of(world), "main")] == [2, 1]
    assert await _var(fake, world, "mood") == "`mood` = calm"

    # A user's message came after: Finn's reply is history now, and 🔄 on it does nothing.
    model.script(reply_text("Mira 2."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Mira, and now?",
        done=lambda: len(said(fake, world.rp.id)) == 3,
    )
    asked, shown = len(model.chat_requests), content(finn)
    await fake.react(finn, world.alice, "🔄")
    await fake.wait_idle(quiet=0.3)
    assert len(model.chat_requests) == asked and content(finn) == shown
