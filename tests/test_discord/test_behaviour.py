"""Config bindings, the mention policy, failed generations and mention safety."""

from __future__ import annotations

from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import PacedService, Starter, World, bind


async def test_channels_bound_in_the_config_play_without_a_command(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot(channels={str(world.rp.id): "Aqua"})
    await fake.say(world.rp, world.alice, "hi")
    sent = await fake.wait_for(
        lambda: [m for m in fake.sent_in(world.rp) if m["content"].endswith("Alice: hi")],
        what="reply",
    )
    assert sent[0]["author"]["username"] == "Aqua"


async def test_mention_policy_answers_when_the_bot_is_mentioned(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot(reply_policy="mention")
    await bind(world)
    await fake.say(world.rp, world.alice, "we sneak in")
    await fake.say(world.rp, world.bob, "quietly")
    await fake.wait_idle(quiet=0.3)
    assert service.respond_calls() == []
    await fake.say(world.rp, world.carol, "what do we see?", mention_bot=True)
    await fake.wait_for(lambda: service.respond_calls(), what="respond on mention")
    lines = service.respond_calls()[0][2]
    assert [ln.text for ln in lines] == ["we sneak in", "quietly", "what do we see?"]


async def test_a_failed_generation_is_reported_in_place(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    service.fail_next = True
    await fake.say(world.rp, world.alice, "hello?")
    sent = await fake.wait_for(
        lambda: [m for m in fake.sent_in(world.rp) if "no reply" in m["content"]],
        what="failure notice",
    )
    assert "the model failed" in sent[0]["content"]
    await fake.say(world.rp, world.alice, "again")
    await fake.wait_for(
        lambda: [m for m in fake.sent_in(world.rp) if m["content"].endswith("Alice: again")],
        what="next floor works",
    )


async def test_replies_never_ping_anyone(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    service.reply_for = lambda char, lines, page: f"@everyone look! <@{lines[0].speaker.id}>"
    await start_bot()
    await bind(world)
    await fake.say(world.rp, world.alice, "ping?")
    await fake.wait_for(lambda: service.respond_calls(), what="respond")
    await fake.wait_idle(quiet=0.2)
    posts = fake.calls_to("POST", r"^/webhooks/\d+/")
    assert posts and all(c.body["allowed_mentions"] == {"parse": []} for c in posts)
