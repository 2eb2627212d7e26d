"""On the real engine (TavernService on a SQLite file, the fake OpenAI model through the openai
client): streamed webhook replies named after the card, long replies split, 429s retried, and a
restart that carries on with the stored history."""

from __future__ import annotations

from typing import Any

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


def hook_calls(fake: FakeDiscord, method: str, *, edits: bool = False) -> list[Any]:
    """Calls to the channel webhooks (not interaction follow-ups, which share the route)."""
    hooks = "|".join(str(w.id) for w in fake.webhooks.values()) or "none"
    tail = r"/messages/\d+" if edits else ""
    return fake.calls_to(method, rf"^/webhooks/({hooks})/[^/]+{tail}$")


async def test_a_bound_channel_gets_a_streamed_webhook_reply_named_after_the_card(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    text = " ".join(f"The goddess pours drink number {n}." for n in range(1, 9))
    model.script(FakeReply(text=text, chunk_chars=30, chunk_delay_s=0.08))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Good evening!",
        done=lambda: [m for m in webhook_replies(fake, world.rp.id) if m["content"] == text],
    )
    replies = webhook_replies(fake, world.rp.id)
    assert len(replies) == 1
    assert replies[0]["author"]["username"] == CARD_NAME
    # Streamed: posted with the first part, then edited as the model wrote.
    posts = hook_calls(fake, "POST")
    edits = hook_calls(fake, "PATCH", edits=True)
    assert len(posts) == 1 and edits, "one post, then edits"
    first = posts[0].body["content"]
    assert first and len(first) < len(text) and text.startswith(first.rstrip("…").rstrip())
    assert edits[-1].body["content"] == text
    assert fake.calls_to("POST", rf"^/channels/{world.rp.id}/typing$"), "typing while generating"
    # The card reached the model, and the floor is stored in the database.
    prompt = prompt_text(narrator_requests(model)[-1])
    assert "A water goddess who keeps the tavern" in prompt and "Good evening!" in prompt
    history = await engine.svc.history(key_of(world), "main")
    assert [(v.floor, v.text, v.character) for v in history] == [(1, text, CARD_NAME)]
    ref = await engine.svc.resolve_message(key_of(world), replies[0]["id"])
    assert ref is not None and (ref.floor, ref.role) == (1, "assistant")


async def test_a_reply_of_2500_characters_arrives_as_two_messages(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    paragraphs = [
        f"Paragraph {n}: " + "the rain keeps falling on the roof. " * 2 for n in range(30)
    ]
    text = "\n\n".join(p.strip() for p in paragraphs)[:2500].rsplit(" ", 1)[0] + "."
    assert 2400 < len(text) <= 2500
    model.script(reply_text(text))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Tell me a long story.",
        done=lambda: len(webhook_replies(fake, world.rp.id)) == 2,
    )
    replies = webhook_replies(fake, world.rp.id)
    assert len(replies) == 2
    assert all(len(m["content"]) <= 2000 for m in replies)
    assert all(m["author"]["username"] == CARD_NAME for m in replies)
    # Split on a paragraph boundary: nothing lost, nothing cut inside a word.
    assert replies[0]["content"].endswith("roof.")
    assert " ".join(m["content"] for m in replies).split() == text.split()
    history = await engine.svc.history(key_of(world), "main")
    assert history[-1].text == text


async def test_a_429_on_send_is_retried_and_the_reply_arrives_once(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    model.script(reply_text("Rain again."))
    fake.fail_next("POST", r"^/webhooks/\d+/", status=429, retry_after=0.1, times=2)
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "How is the weather?",
        done=lambda: webhook_replies(fake, world.rp.id),
    )
    statuses = [c.status for c in hook_calls(fake, "POST")]
    assert statuses == [429, 429, 200]
    assert [m["content"] for m in webhook_replies(fake, world.rp.id)] == ["Rain again."]
    assert len(narrator_requests(model)) == 1, "the reply is never generated twice"


async def test_the_bot_restarts_mid_conversation_and_carries_on(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    runner = await start_playing(fake, world, start_real)
    for n, text in enumerate(("I light the lantern.", "I open the old map."), start=1):
        model.script(reply_text(f"Reply {n}."))
        await say_and_wait(
            fake,
            world.rp,
            world.alice,
            text,
            done=lambda n=n: len(webhook_replies(fake, world.rp.id)) == n,
        )
    await runner.close()
    await engine.close()
    await engine.open()
    await start_real()
    # No /tavern start: the binding and the history come back from the database.
    model.script(reply_text("Reply 3."))
    await say_and_wait(
        fake,
        world.rp,
        world.bob,
        "What does the map show?",
        done=lambda: len(webhook_replies(fake, world.rp.id)) == 3,
    )
    prompt = prompt_text(narrator_requests(model)[-1])
    for earlier in ("I light the lantern.", "Reply 1.", "I open the old map.", "Reply 2."):
        assert earlier in prompt, f"{earlier!r} missing from the prompt after the restart"
    assert webhook_replies(fake, world.rp.id)[-1]["author"]["username"] == CARD_NAME
    history = await engine.svc.history(key_of(world), "main")
    assert [v.text for v in history] == ["Reply 1.", "Reply 2.", "Reply 3."]
    assert engine.opened == 2


async def test_after_a_restart_the_floors_speaker_may_still_swipe(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    runner = await start_playing(fake, world, start_real)
    model.script(reply_text("First take."))
    await say_and_wait(
        fake, world.rp, world.alice, "A song!", done=lambda: webhook_replies(fake, world.rp.id)
    )
    await runner.close()
    await engine.close()
    await engine.open()
    restarted = await start_real()
    reply = webhook_replies(fake, world.rp.id)[-1]
    # Bob did not speak on that floor and is no moderator: refused, as before the restart.
    await fake.react(reply, world.bob, "🔄")
    await fake.wait_for(
        lambda: [r for r in fake.reactions if r[2] == world.bob.id and r[3] == "remove"],
        what="bob's reaction removed",
    )
    assert restarted.reactions.ignored == 1
    # Alice spoke on it: the bot finds that out from the linked messages and regenerates.
    model.script(reply_text("Second take."))
    await fake.react(reply, world.alice, "🔄")
    await fake.wait_for(
        lambda: "‹ 2/2 ›" in webhook_replies(fake, world.rp.id)[-1]["content"], what="page 2"
    )
    view = (await engine.svc.history(key_of(world), "main"))[-1]
    assert (view.page, view.pages, view.text) == (2, 2, "Second take.")


async def test_a_card_imported_in_an_unbound_channel_never_starts_play_there(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    runner = await start_playing(fake, world, start_real)  # imports the card in #other
    await fake.say(world.other, world.alice, "hello?")
    await fake.wait_idle(quiet=0.3)
    await runner.close()
    await engine.close()
    await engine.open()
    await start_real()
    await fake.say(world.other, world.alice, "hello after the restart?")
    await fake.wait_idle(quiet=0.3)
    assert model.chat_requests == []
    assert webhook_replies(fake, world.other.id) == []
    # The card is still the guild's: a game master binds another channel to it by name.
    record = await fake.slash(world.other, world.gm, "tavern start", character=CARD_NAME)
    assert "plays here now" in record.text
    model.script(reply_text("At your service."))
    await say_and_wait(
        fake, world.other, world.alice, "now?", done=lambda: webhook_replies(fake, world.other.id)
    )
    prompt = prompt_text(narrator_requests(model)[-1])
    assert "A water goddess who keeps the tavern" in prompt
