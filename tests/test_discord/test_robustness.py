"""Reconnects, resumes, restarts, deleted webhooks and refused deliveries."""

from __future__ import annotations

from adapters.discord.convert import session_key
from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import PacedService, Starter, World, bind


def _replies(fake: FakeDiscord, world: World) -> list[dict]:
    return [m for m in fake.sent_in(world.rp) if "webhook_id" in m]


async def _exchange(fake: FakeDiscord, world: World, service: PacedService, text: str) -> dict:
    count = len(service.respond_calls())
    await fake.say(world.rp, world.alice, text)
    await fake.wait_for(lambda: len(service.respond_calls()) > count, what=text)
    await fake.wait_idle(quiet=0.15)
    return _replies(fake, world)[-1]


async def test_gateway_drop_resumes_and_replays_missed_events(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    await _exchange(fake, world, service, "before")
    await fake.drop_gateway(4000)
    # Said while the bot is disconnected: Discord replays it on RESUME.
    await fake.say(world.rp, world.alice, "during")
    await fake.wait_for(lambda: fake.gateway.resumes == 1, what="resume")
    await fake.wait_for(lambda: len(service.respond_calls()) == 2, what="missed message")
    await fake.wait_idle(quiet=0.15)
    assert fake.gateway.identifies == 1
    await fake.gateway.request_reconnect()
    await fake.wait_for(lambda: fake.gateway.resumes == 2, what="op 7 resume")
    reply = await _exchange(fake, world, service, "after")
    assert reply["content"].endswith("Alice: after")


async def test_restart_mid_conversation_carries_on_with_history(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    first = await start_bot()
    await bind(world)
    old = await _exchange(fake, world, service, "one")
    await first.close()
    second = await start_bot()
    reply = await _exchange(fake, world, service, "two")
    assert reply["content"].endswith("Alice: two")
    key = session_key(world.guild.id, world.rp.id)
    assert [v.floor for v in await service.history(key, "main")] == [1, 2]
    assert len(fake.webhooks) == 1, "the existing webhook is found again, not duplicated"
    await second.close()
    # A third process never streamed these replies; it finds them through the service.
    third = await start_bot()
    await fake.react(old, world.alice, "🔄")
    await fake.wait_for(lambda: third.reactions.ignored == 1, what="older reply ignored")
    await fake.react(reply, world.mod, "🔄")
    await fake.wait_for(lambda: "‹ 2/2 ›" in _replies(fake, world)[-1]["content"], what="regen")
    assert len([c for c in service.calls if c[0] == "regenerate"]) == 1
    assert _replies(fake, world)[-1]["id"] == reply["id"], "the old reply is edited in place"


async def test_deleted_webhook_is_recreated(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    runner = await start_bot()
    await bind(world)
    await _exchange(fake, world, service, "one")
    (old_hook,) = list(fake.webhooks)
    await fake.delete_webhook(old_hook)
    reply = await _exchange(fake, world, service, "two")
    assert reply["content"].endswith("Alice: two")
    assert list(fake.webhooks) != [old_hook] and len(fake.webhooks) == 1
    assert runner.outlets.created == 2


async def test_undelivered_reply_is_delivered_later_and_never_generated_twice(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    runner = await start_bot(delivery_attempts=1)
    await bind(world)
    await _exchange(fake, world, service, "warm up")
    # discord.py retries a 429 five times by itself; seven in a row defeat one attempt.
    fake.fail_next("POST", r"^/webhooks/\d+/", status=429, retry_after=0.01, times=7)
    fake.fail_next("PATCH", r"^/webhooks/\d+/", status=429, retry_after=0.01, times=7)
    await fake.say(world.rp, world.alice, "are you there?")
    await fake.wait_for(
        lambda: [m for m in _replies(fake, world) if m["content"].endswith("are you there?")],
        what="redelivered reply",
    )
    await fake.wait_idle(quiet=0.2)
    assert len(service.respond_calls()) == 2
    assert runner.turns.undelivered == 0
    statuses = [c.status for c in fake.calls_to("POST", r"^/webhooks/\d+/")]
    assert statuses.count(429) == 7


async def test_one_generation_at_a_time_per_branch(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    service.model_delay_s = 0.2
    await start_bot()
    await bind(world)
    for text in ("a", "b", "c"):
        await fake.say(world.rp, world.alice, text)
    await fake.wait_for(lambda: len(service.respond_calls()) == 3, what="three floors")
    await fake.wait_idle(quiet=0.3)
    key = session_key(world.guild.id, world.rp.id)
    assert service.max_generating[(key, "main")] == 1
    assert [v.text[-1] for v in await service.history(key, "main")] == ["a", "b", "c"]
