"""Messages in a bound channel get streamed webhook replies; long replies split; 429s retried."""

from __future__ import annotations

from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import PacedService, Starter, World, bind


def _replies(fake: FakeDiscord, world: World) -> list[dict]:
    return [m for m in fake.sent_in(world.rp) if "webhook_id" in m]


async def test_bound_channel_gets_streamed_webhook_reply_with_character_name(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    service.chunk_delay_s = 0.15
    await start_bot()
    await bind(world, character="Aqua")
    await fake.say(world.rp, world.alice, "Hello there")
    replies = await fake.wait_for(
        lambda: [
            m
            for m in _replies(fake, world)
            if "You said" in m["content"] and not m["content"].endswith("…")
        ],
        what="final reply",
    )
    reply = replies[0]
    assert reply["author"]["username"] == "Aqua"
    assert reply["content"] == "Aqua: I hear you. You said: Alice: Hello there"
    # Streaming: the message was posted early and then edited towards the final text.
    edits = [text for mid, text in fake.edits if mid == int(reply["id"])]
    assert edits and edits[-1] == reply["content"]
    assert len(edits) >= 2, "the reply is edited while the model writes"
    assert fake.typing.count(world.rp.id) >= 1
    assert len(fake.webhooks) == 1


async def test_unbound_channel_is_ignored_and_own_messages_do_not_loop(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    await fake.say(world.other, world.alice, "anyone here?")
    await fake.say(world.rp, world.alice, "one")
    await fake.wait_for(lambda: service.respond_calls(), what="respond")
    await fake.wait_idle(quiet=0.3)
    # The echoed webhook and bot messages never become input.
    assert len(service.respond_calls()) == 1
    assert fake.sent_in(world.other) == []


async def test_long_reply_arrives_as_two_messages(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    paragraph = "The rain kept falling over the old tavern. " * 29
    service.reply_for = lambda char, lines, page: (paragraph.strip() + "\n\n") * 2
    await start_bot()
    await bind(world)
    await fake.say(world.rp, world.alice, "tell me a story")
    await fake.wait_for(lambda: service.respond_calls(), what="respond")
    await fake.wait_idle(quiet=0.3)
    replies = _replies(fake, world)
    assert len((paragraph.strip() + "\n\n") * 2) > 2000
    assert len(replies) == 2
    assert [m["content"] for m in replies] == [paragraph.strip()] * 2
    assert all(len(m["content"]) <= 2000 for m in replies)


async def test_rate_limited_send_is_retried_and_arrives(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    # The commands' answers went to interaction webhooks too: count from here.
    before = len(fake.calls_to("POST", r"^/webhooks/\d+/"))
    fake.fail_next("POST", r"^/webhooks/\d+/", status=429, retry_after=0.05, times=2)
    await fake.say(world.rp, world.alice, "are you there?")
    await fake.wait_for(
        lambda: [m for m in _replies(fake, world) if m["content"].endswith("are you there?")],
        what="reply after 429",
    )
    posts = fake.calls_to("POST", r"^/webhooks/\d+/")[before:]
    assert [c.status for c in posts][:3] == [429, 429, 200]


async def test_without_manage_webhooks_the_bot_speaks_with_the_name_in_bold(
    fake: FakeDiscord, start_bot: Starter
) -> None:
    from tests.fakes.discord.world import MEMBER_DEFAULT
    from tests.test_discord.conftest import build_world

    world = build_world(fake, bot_permissions=MEMBER_DEFAULT)
    await start_bot()
    await bind(world, character="Aqua")
    await fake.say(world.rp, world.alice, "hi")
    sent = await fake.wait_for(
        lambda: [m for m in fake.sent_in(world.rp) if m["content"].endswith("Alice: hi")],
        what="bot reply",
    )
    assert sent[0]["content"].startswith("**Aqua**\nAqua: I hear you.")
    assert "webhook_id" not in sent[0] and fake.webhooks == {}
