"""Group role-play on Discord, through discord.py and the loopback fake, on the real engine:
each member speaks through the webhook under its own name, in the order the group's strategy
chooses, each seeing the replies before it; muted members, the list and manual strategies,
``/group speak``, a Discord reply calling a member, reactions on a member's reply, threads
forking the whole group, and the commands that change the group."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import FakeError, FakeOpenAIServer
from tests.test_discord.conftest import World
from tests.test_discord.group_support import (
    FINN,
    MIRA,
    import_members,
    said,
    start_group,
)
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


def _by(fake: FakeDiscord, user: Any) -> list[dict[str, Any]]:
    """The messages ``user`` posted, oldest first."""
    return [m for m in fake.messages.values() if m["author"]["id"] == str(user.id)]


async def _mood(fake: FakeDiscord, world: World) -> str:
    return (await fake.slash(world.rp, world.carol, "vars get", name="mood")).text


async def test_named_members_answer_under_their_names_in_mention_order(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_group(fake, world, start_real)
    model.script(reply_text("The lamp is lit."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Mira, what do you think?",
        done=lambda: said(fake, world.rp.id),
    )
    assert said(fake, world.rp.id) == [("Mira", "The lamp is lit.")]

    model.script(reply_text("Aye, the tide turns."), reply_text("Then we wait."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Finn and Mira, shall we sail?",
        done=lambda: len(said(fake, world.rp.id)) == 3,
    )
    # Two messages, one per member, in the order the message names them.
    assert said(fake, world.rp.id)[1:] == [
        ("Finn", "Aye, the tide turns."),
        ("Mira", "Then we wait."),
    ]
    requests = narrator_requests(model)
    assert len(requests) == 3
    finn, mira = prompt_text(requests[1]), prompt_text(requests[2])
    assert FINN in finn and MIRA not in finn  # swap mode: the speaker's card only
    # Mira's prompt holds Finn's reply, named, and her own card instead of his.
    assert "Finn: Aye, the tide turns." in mira and MIRA in mira and FINN not in mira
    # Each message is linked to its own floor, so reactions and threads find it.
    key = key_of(world)
    refs = [
        await engine.svc.resolve_message(key, m["id"]) for m in webhook_replies(fake, world.rp.id)
    ]
    assert [(r.floor, r.role) for r in refs if r is not None] == [
        (1, "assistant"),
        (2, "assistant"),
        (3, "assistant"),
    ]
    # The user's message is linked to the floor holding it: the first of its turn.
    user_ref = await engine.svc.resolve_message(key, _by(fake, world.alice)[-1]["id"])
    assert user_ref is not None and (user_ref.floor, user_ref.role) == (2, "user")


async def test_muted_list_manual_and_group_speak(
    fake: FakeDiscord, world: World, start_real: RealStarter, model: FakeOpenAIServer
) -> None:
    runner = await start_group(fake, world, start_real)
    muted = await fake.slash(world.rp, world.gm, "character mute", name="Finn")
    assert "**Finn** is muted" in muted.text and "Finn (muted)" in muted.text, muted.text
    model.script(reply_text("Only me."))
    await say_and_wait(
        fake, world.rp, world.alice, "Finn, Mira: any news?", done=lambda: said(fake, world.rp.id)
    )
    assert said(fake, world.rp.id) == [("Mira", "Only me.")]  # the muted Finn never speaks

    await fake.slash(world.rp, world.gm, "character unmute", name="Finn")
    listed = await fake.slash(world.rp, world.gm, "group strategy", strategy="list")
    assert "strategy: list" in listed.text, listed.text
    model.script(reply_text("Mira first."), reply_text("Finn second."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Anyone there?",
        done=lambda: len(said(fake, world.rp.id)) == 3,
    )
    assert said(fake, world.rp.id)[1:] == [("Mira", "Mira first."), ("Finn", "Finn second.")]

    refused = await fake.slash(world.rp, world.alice, "group strategy", strategy="manual")
    assert refused.text.startswith("⛔ You need"), refused.text
    await fake.slash(world.rp, world.gm, "group strategy", strategy="manual")
    asked = len(model.chat_requests)
    done = runner.turns.floors_done
    await fake.say(world.rp, world.alice, "Mira, hello?")
    await fake.wait_for(lambda: runner.turns.floors_done == done + 1, what="the manual turn")
    await fake.wait_idle(quiet=0.2)
    assert len(model.chat_requests) == asked and len(said(fake, world.rp.id)) == 3

    # Any player may call a member; it answers through its own webhook identity.
    model.script(reply_text("Ahoy."))
    spoken = await fake.slash(world.rp, world.bob, "group speak", name="finn", wait_s=10)
    assert "**Finn** answered" in spoken.text, spoken.text
    await fake.wait_idle(quiet=0.15)
    assert said(fake, world.rp.id)[-1] == ("Finn", "Ahoy.")
    assert "Mira, hello?" in prompt_text(narrator_requests(model)[-1])
    unknown = await fake.slash(world.rp, world.bob, "group speak", name="Zed")
    assert "**Zed** does not play here (characters: Mira, Finn)" in unknown.text, unknown.text


async def test_regenerate_and_swipe_act_on_the_latest_members_reply_only(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_group(fake, world, start_real)
    await engine.svc.configure(key_of(world), tools={"enabled": True})
    model.script(reply_text("Finn 1."), set_var("mood", "calm"), reply_text("Mira 1."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Finn and Mira, report.",
        done=lambda: len(said(fake, world.rp.id)) == 2,
    )
    finn, mira = webhook_replies(fake, world.rp.id)
    assert await _mood(fake, world) == "`mood` = calm"
    # (Finn's earlier reply takes reactions too: test_real_engine_group_earlier.py.)

    model.script(set_var("mood", "stormy"), reply_text("Mira 2."))
    await fake.react(mira, world.alice, "🔄")

    def mira_now() -> str:
        return str(fake.messages[int(mira["id"])]["content"])

    await fake.wait_for(lambda: "‹ 2/2 ›" in mira_now(), what="Mira's page 2")
    await fake.wait_idle(quiet=0.15)
    assert mira_now().startswith("Mira 2.")
    assert fake.messages[int(finn["id"])]["content"] == "Finn 1."  # the other reply unchanged
    assert [name for name, _ in said(fake, world.rp.id)] == ["Finn", "Mira"]  # edited in place
    regenerated = prompt_text(narrator_requests(model)[-2])
    assert MIRA in regenerated and "Finn: Finn 1." in regenerated and FINN not in regenerated
    assert await _mood(fake, world) == "`mood` = stormy"

    await fake.react(mira, world.alice, "◀️")
    await fake.wait_for(lambda: "‹ 1/2 ›" in mira_now(), what="Mira's page 1")
    await fake.wait_idle(quiet=0.15)
    assert mira_now().startswith("Mira 1.")
    assert await _mood(fake, world) == "`mood` = calm"
    assert fake.messages[int(finn["id"])]["content"] == "Finn 1."
    history = await engine.svc.history(key_of(world), "main")
    assert [(h.character, h.text, h.page) for h in history] == [
        ("Finn", "Finn 1.", 1),
        ("Mira", "Mira 1.", 1),
    ]


async def test_a_discord_reply_to_a_members_message_calls_that_member(
    fake: FakeDiscord, world: World, start_real: RealStarter, model: FakeOpenAIServer
) -> None:
    runner = await start_group(fake, world, start_real)
    model.script(reply_text("Finn 1."), reply_text("Mira 1."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Finn and Mira, hello.",
        done=lambda: len(said(fake, world.rp.id)) == 2,
    )
    finn, mira = webhook_replies(fake, world.rp.id)
    # The text names Mira, but the user answers Finn's message: Finn alone answers.
    model.script(reply_text("Finn again."))
    await fake.say(world.rp, world.bob, "Mira, is he right?", reply_to=finn)
    await fake.wait_for(lambda: len(said(fake, world.rp.id)) == 3, what="Finn's answer")
    await fake.wait_idle(quiet=0.2)
    assert said(fake, world.rp.id)[2:] == [("Finn", "Finn again.")]
    # A reply to a message the bot has not seen since it started is looked up in the engine.
    runner.turns.by_message.clear()
    model.script(reply_text("Mira again."))
    await fake.say(world.rp, world.bob, "Finn?", reply_to=mira)
    await fake.wait_for(lambda: len(said(fake, world.rp.id)) == 4, what="Mira's answer")
    await fake.wait_idle(quiet=0.2)
    assert said(fake, world.rp.id)[3:] == [("Mira", "Mira again.")]
    # A reply to a user's message calls nobody: the strategy decides (Finn is named).
    model.script(reply_text("Finn named."))
    await fake.say(world.rp, world.carol, "Finn, you too?", reply_to=_by(fake, world.bob)[-1])
    await fake.wait_for(lambda: len(said(fake, world.rp.id)) == 5, what="Finn named")
    await fake.wait_idle(quiet=0.2)
    assert said(fake, world.rp.id)[4:] == [("Finn", "Finn named.")]


async def test_a_thread_forks_the_whole_group(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_group(fake, world, start_real)
    model.script(reply_text("Mira 1."))
    await say_and_wait(
        fake, world.rp, world.alice, "Mira, hi.", done=lambda: said(fake, world.rp.id)
    )
    thread = await fake.start_thread(world.rp, world.bob, "what if")
    model.script(reply_text("Finn in the thread."), reply_text("Mira in the thread."))
    await say_and_wait(
        fake,
        thread,
        world.bob,
        "Finn and Mira, what if?",
        done=lambda: len(said(fake, thread.id)) == 2,
    )
    assert said(fake, thread.id) == [
        ("Finn", "Finn in the thread."),
        ("Mira", "Mira in the thread."),
    ]
    assert said(fake, world.rp.id) == [("Mira", "Mira 1.")]
    history = await engine.svc.history(key_of(world), str(thread.id))
    assert [h.character for h in history] == ["Mira", "Finn", "Mira"]


async def test_start_with_two_and_change_the_group_with_commands(
    fake: FakeDiscord, world: World, start_real: RealStarter
) -> None:
    await start_real()
    await import_members(fake, world, "Mira", "Finn", "Cid")
    offered = await fake.autocomplete(
        world.rp, world.gm, "tavern start", focused="character2", character="Mira", character2="i"
    )
    assert offered == ["Cid", "Finn", "Mira"]
    started = await fake.slash(
        world.rp, world.gm, "tavern start", character="mira", character2="Finn"
    )
    assert "**Mira** and **Finn** play here now" in started.text, started.text

    async def group() -> str:
        text = (await fake.slash(world.rp, world.carol, "session info")).text
        return next((ln for ln in text.splitlines() if ln.startswith("Group:")), "")

    assert await group() == "Group: Mira, Finn · strategy: natural · mode: swap"
    added = await fake.slash(world.rp, world.gm, "character add", name="cid")
    assert "➕ **Cid** joins" in added.text, added.text
    members = await fake.autocomplete(
        world.rp, world.gm, "character remove", focused="name", name=""
    )
    assert members == ["Mira", "Finn", "Cid"]
    await fake.slash(world.rp, world.gm, "character mute", name="Finn")
    await fake.slash(world.rp, world.gm, "group strategy", strategy="list")
    mode = await fake.slash(world.rp, world.gm, "group mode", mode="join")
    assert "mode: join" in mode.text, mode.text
    assert await group() == "Group: Mira, Finn (muted), Cid · strategy: list · mode: join"
    info = await fake.slash(world.rp, world.carol, "character info")
    assert "Group: Mira, Finn (muted), Cid" in info.text, info.text

    refused = await fake.slash(world.rp, world.alice, "character add", name="Finn")
    assert refused.text.startswith("⛔ You need"), refused.text
    twice = await fake.slash(world.rp, world.gm, "character add", name="Finn")
    assert "Finn already plays" in twice.text, twice.text
    await fake.slash(world.rp, world.gm, "character remove", name="Finn")
    assert await group() == "Group: Mira, Cid · strategy: list · mode: join"
    solo = await fake.slash(world.rp, world.gm, "character remove", name="Cid")
    assert "**Mira** plays here alone now." in solo.text, solo.text
    assert await group() == ""
    alone = await fake.slash(world.rp, world.gm, "character mute", name="Mira")
    assert "plays one character" in alone.text, alone.text


async def test_a_member_failing_mid_turn_keeps_the_reply_before_it(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    runner = await start_group(fake, world, start_real)
    model.script(reply_text("Finn 1."), FakeError(status=500))
    await fake.say(world.rp, world.alice, "Finn and Mira, report.")
    await fake.wait_for(
        lambda: runner.turns.floors_done == 0 and len(said(fake, world.rp.id)) == 2
    )
    await fake.wait_idle(quiet=0.3)
    (finn, finn_text), (mira, notice) = said(fake, world.rp.id)
    # Finn's reply stays as it was; Mira's message says she gave no reply.
    assert (finn, finn_text) == ("Finn", "Finn 1.")
    assert mira == "Mira" and notice.startswith("*(no reply:"), notice
    # The user's message belongs to the turn's first floor, Finn's.
    user_ref = await engine.svc.resolve_message(key_of(world), _by(fake, world.alice)[-1]["id"])
    assert user_ref is not None and (user_ref.floor, user_ref.role) == (1, "user")
    # 🔄 on the notice retries Mira's floor; the notice becomes her reply.
    model.script(reply_text("Mira at last."))
    notice_message = webhook_replies(fake, world.rp.id)[1]
    await fake.react(notice_message, world.alice, "🔄")
    await fake.wait_for(
        lambda: fake.messages[int(notice_message["id"])]["content"].startswith("Mira at last.")
    )
    assert said(fake, world.rp.id)[0] == ("Finn", "Finn 1.")
