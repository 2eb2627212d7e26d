"""Threads are branches: from a bot reply they fork after its floor; elsewhere after the latest."""

from __future__ import annotations

from adapters.discord.convert import session_key
from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import PacedService, Starter, World, bind


async def _chat(fake: FakeDiscord, world: World, service: PacedService, *texts: str) -> None:
    for text in texts:
        count = len(service.respond_calls())
        await fake.say(world.rp, world.alice, text)
        await fake.wait_for(lambda c=count: len(service.respond_calls()) > c, what=text)
        await fake.wait_idle(quiet=0.15)


def _webhook_replies(fake: FakeDiscord, channel_id: int) -> list[dict]:
    return [
        m
        for m in fake.messages.values()
        if m["channel_id"] == str(channel_id) and "webhook_id" in m
    ]


async def test_thread_from_second_reply_forks_after_floor_two(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    await _chat(fake, world, service, "one", "two", "three")
    second = _webhook_replies(fake, world.rp.id)[1]
    assert second["content"].endswith("Alice: two")
    thread = await fake.start_thread(world.rp, world.bob, "what if", from_message=second)
    key = session_key(world.guild.id, world.rp.id)
    await fake.wait_for(
        lambda: [c for c in service.calls if c[0] == "fork"], what="fork on THREAD_CREATE"
    )
    assert [c[1] for c in service.calls if c[0] == "fork"] == [(key, "main", 2, str(thread.id))]
    await fake.say(thread, world.bob, "in the thread")
    await fake.wait_for(lambda: _webhook_replies(fake, thread.id), what="thread reply")
    await fake.wait_idle(quiet=0.15)
    respond = service.respond_calls()[-1]
    assert respond[1] == str(thread.id)
    thread_history = await service.history(key, str(thread.id))
    assert [v.floor for v in thread_history] == [1, 2, 3]
    assert thread_history[-1].text.endswith("Bob: in the thread")
    main_history = await service.history(key, "main")
    assert [v.text.rsplit(": ", 1)[-1] for v in main_history] == ["one", "two", "three"]
    # The thread's reply went through the parent's webhook with thread_id.
    posts = fake.calls_to("POST", r"^/webhooks/\d+/")
    assert posts[-1].query.get("thread_id") == str(thread.id)


async def test_thread_elsewhere_forks_after_the_latest_floor(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    await _chat(fake, world, service, "one", "two")
    thread = await fake.start_thread(world.rp, world.bob, "side plot")
    await fake.say(thread, world.bob, "meanwhile")
    await fake.wait_for(lambda: _webhook_replies(fake, thread.id), what="thread reply")
    await fake.wait_idle(quiet=0.15)
    forks = [c[1] for c in service.calls if c[0] == "fork"]
    assert [f[2] for f in forks] == [None]
    key = session_key(world.guild.id, world.rp.id)
    assert (await service.session_info(key)).branches[-1].floors == 3


async def test_branch_from_here_creates_the_thread(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    await _chat(fake, world, service, "one", "two", "three")
    first = _webhook_replies(fake, world.rp.id)[0]
    record = await fake.message_command(world.rp, world.carol, "Branch from here", first)
    assert "forks after the floor 1" in record.text and record.ephemeral
    assert int(first["id"]) in fake.channels, "the thread has the message's id"
    forks = [c[1] for c in service.calls if c[0] == "fork"]
    assert [(f[1], f[2], f[3]) for f in forks] == [("main", 1, first["id"])]
    again = await fake.message_command(world.rp, world.carol, "Branch from here", first)
    assert "already has a branch" in again.text


async def test_branch_from_a_user_message_forks_at_the_latest_floor(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    await _chat(fake, world, service, "one", "two")
    mine = next(m for m in fake.messages.values() if m["content"] == "one")
    record = await fake.message_command(world.rp, world.alice, "Branch from here", mine)
    assert "latest floor" in record.text
    forks = [c[1] for c in service.calls if c[0] == "fork"]
    assert [(f[1], f[2]) for f in forks] == [("main", None)]
