"""Group role-play: the quiet period gathers everyone's lines into one floor; edits, deletes,
personas and private DM sessions."""

from __future__ import annotations

from adapters.discord.convert import session_key
from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import PacedService, Starter, World, bind


async def test_three_users_in_the_quiet_period_make_one_floor(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot(reply_policy="quiet_period", quiet_period_s=1.0)
    await bind(world)
    await fake.say(world.rp, world.alice, "I draw my sword.")
    typo = await fake.say(world.rp, world.bob, "I hide behnid the bar.")
    await fake.say(world.rp, world.carol, "I order an ale.")
    await fake.edit_by_user(typo, "I hide behind the bar.")
    await fake.wait_for(lambda: service.respond_calls(), what="one floor")
    await fake.wait_idle(quiet=0.3)
    calls = service.respond_calls()
    assert len(calls) == 1
    key, branch, lines = calls[0]
    assert key == session_key(world.guild.id, world.rp.id) and branch == "main"
    assert [(ln.speaker.name, ln.text) for ln in lines] == [
        ("Alice", "I draw my sword."),
        ("Bob", "I hide behind the bar."),
        ("Carol", "I order an ale."),
    ]
    assert [ln.speaker.id for ln in lines] == [
        str(u.id) for u in (world.alice, world.bob, world.carol)
    ]


async def test_deleting_a_waiting_line_withdraws_it_and_a_sent_one_hides_its_floor(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot(reply_policy="quiet_period", quiet_period_s=1.0)
    await bind(world)
    keep = await fake.say(world.rp, world.alice, "keep me")
    oops = await fake.say(world.rp, world.bob, "oops")
    await fake.delete_by_user(oops)
    await fake.wait_for(lambda: service.respond_calls(), what="floor")
    await fake.wait_idle(quiet=0.3)
    assert [ln.text for ln in service.respond_calls()[0][2]] == ["keep me"]
    reply = [m for m in fake.sent_in(world.rp) if "webhook_id" in m][-1]
    await fake.delete_by_user(reply)
    await fake.delete_by_user(keep)
    await fake.wait_for(lambda: len([c for c in service.calls if c[0] == "hide_message"]) == 2)
    key = session_key(world.guild.id, world.rp.id)
    hidden = [c[1] for c in service.calls if c[0] == "hide_message"]
    assert hidden == [(key, reply["id"]), (key, keep["id"])]
    assert service.sessions[key].branches["main"].floors[0].hidden


async def test_persona_names_the_speaker(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    record = await fake.slash(
        world.rp, world.alice, "persona set", name="Lady Ash", description="a wandering knight"
    )
    assert "Lady Ash" in record.text and record.ephemeral
    await fake.say(world.rp, world.alice, "Greetings.")
    await fake.wait_for(lambda: service.respond_calls(), what="respond")
    await fake.wait_idle(quiet=0.2)
    # The line carries the speaker's id; the service names them by their persona, read
    # from the database when it admits the floor (issue 19: never from a per-process copy).
    line = service.respond_calls()[0][2][0]
    assert line.speaker.id == str(world.alice.id)
    (view,) = await service.history(session_key(world.guild.id, world.rp.id), "main")
    assert view.inputs == (("Lady Ash", "Greetings."),)
    shown = await fake.slash(world.rp, world.alice, "persona show")
    assert "a wandering knight" in shown.text
    elsewhere = await fake.slash(world.rp2, world.gm2, "persona show")
    assert "No persona" in elsewhere.text


async def test_a_dm_is_a_private_session(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    dm = fake.add_dm(world.alice)
    await fake.say(dm, world.alice, "just us")
    sent = await fake.wait_for(
        lambda: [m for m in fake.sent_in(dm) if m["content"].endswith("Alice: just us")],
        what="dm reply",
    )
    assert sent[0]["content"].startswith("**")
    key = service.respond_calls()[0][0]
    assert key.realm == f"dm:{world.alice.id}" and key.key == str(dm.id)


async def test_dms_can_be_turned_off(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot(allow_dms=False)
    dm = fake.add_dm(world.alice)
    await fake.say(dm, world.alice, "hello?")
    await fake.wait_idle(quiet=0.3)
    assert service.respond_calls() == [] and fake.sent_in(dm) == []


async def test_commands_in_a_dm_act_on_the_private_session(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    dm = fake.add_dm(world.alice)
    await fake.say(dm, world.alice, "just us")
    await fake.wait_for(lambda: service.respond_calls(), what="dm reply")
    await fake.wait_idle(quiet=0.15)
    # In a private session its owner is the game master.
    record = await fake.slash(dm, world.alice, "vars set", name="secret", value="42")
    assert "Set `secret` = 42" in record.text
    listed = await fake.slash(dm, world.alice, "vars list")
    assert "`secret` = 42" in listed.text
    # The guild channel sees nothing of it.
    await bind(world)
    assert "secret" not in (await fake.slash(world.rp, world.alice, "vars list")).text
