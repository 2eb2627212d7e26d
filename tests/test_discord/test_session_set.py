"""``/session set option value`` (issue 13): a game master changes one session's settings
under the names every front end uses, with autocomplete, privately; ``/session info`` shows
every option. Against the in-memory service, which parses options by the engine's rules."""

from __future__ import annotations

from adapters.discord.commands.settings import CHOICE_NAME_LIMIT
from engine.turns.options import PROMPT_MODES, OptionSpec
from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import PacedService, Starter, World, bind
from tests.test_discord.real_engine import key_of

OPTION_NAMES = ["mode", "tools", "memory", "budget", "macros", "policy", "global_writes"]


async def test_a_game_master_sets_each_option_privately_and_info_shows_them_all(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    for option, value, shown in (
        ("mode", "compat_strict", "compat_strict"),
        ("tools", "on", "on"),
        ("memory", "OFF", "off"),
        ("budget", "900", "900"),
        ("macros", "full", "full"),
        ("global_writes", "yes", "on"),
    ):
        record = await fake.slash(world.rp, world.gm, "session set", option=option, value=value)
        assert record.ephemeral
        assert record.text == f"Set. This session's **{option}** is now `{shown}`.", record.text
    info = await service.session_info(key_of(world))
    assert (info.prompt_mode, info.tools, info.memory, info.memory_budget) == (
        "compat_strict",
        True,
        False,
        900,
    )
    assert (info.macro_mode, info.tools_global_writes) == ("full", True)
    shown = await fake.slash(world.rp, world.carol, "session info")
    assert shown.ephemeral
    assert (
        "Settings: mode `compat_strict` · tools `on` · memory `off` · budget `900` · "
        "macros `full` · policy `every_message` (default) · global_writes `on`"
    ) in shown.text, shown.text


async def test_bad_options_and_values_get_one_line_and_change_nothing(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    before = await service.session_info(key_of(world))
    bad = await fake.slash(world.rp, world.gm, "session set", option="mode", value="fast")
    assert bad.text == (
        "⚠️ session option mode must be one of compat_strict, compat_plus, native, not 'fast'"
    )
    unknown = await fake.slash(world.rp, world.gm, "session set", option="moode", value="x")
    assert unknown.text.startswith("⚠️ unknown session option 'moode'; options: mode, tools")
    budget = await fake.slash(world.rp, world.gm, "session set", option="budget", value="lots")
    assert "\n" not in budget.text and "budget must be a whole number" in budget.text
    assert await service.session_info(key_of(world)) == before


async def test_a_player_may_not_change_settings(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    refused = await fake.slash(world.rp, world.alice, "session set", option="tools", value="on")
    assert refused.ephemeral and refused.text.startswith("⛔ You need the **Game Master** role")
    assert (await service.session_info(key_of(world))).tools is False
    assert not [c for c in service.calls if c[0] == "set_session_option"]


async def test_options_and_their_values_autocomplete(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    names = await fake.autocomplete(
        world.rp, world.gm, "session set", focused="option", option="", value=""
    )
    assert [n.split(":")[0] for n in names] == OPTION_NAMES
    assert names[0].startswith("mode: prompt layout")
    assert await fake.autocomplete(
        world.rp, world.gm, "session set", focused="option", option="mem", value=""
    ) == [names[2]]
    # The session's value first, then the others.
    modes = await fake.autocomplete(
        world.rp, world.gm, "session set", focused="value", option="mode", value=""
    )
    assert modes == ["compat_plus", "compat_strict", "native"]
    switches = await fake.autocomplete(
        world.rp, world.gm, "session set", focused="value", option="tools", value=""
    )
    assert switches == ["off", "on"]
    budget = await fake.autocomplete(
        world.rp, world.gm, "session set", focused="value", option="budget", value=""
    )
    assert budget == [str((await service.session_info(key_of(world))).memory_budget)]
    assert (
        await fake.autocomplete(
            world.rp, world.gm, "session set", focused="value", option="nope", value=""
        )
        == []
    )


async def test_settings_belong_to_one_session(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    await bind(world, world.other)
    for option, value in (("mode", "native"), ("tools", "on"), ("memory", "off")):
        done = await fake.slash(world.rp, world.gm, "session set", option=option, value=value)
        assert done.text.startswith("Set."), done.text
    here = await service.session_info(key_of(world))
    there = await service.session_info(key_of(world, channel=world.other.id))
    assert (here.prompt_mode, here.tools, here.memory) == ("native", True, False)
    assert (there.prompt_mode, there.tools, there.memory) == ("compat_plus", False, True)
    info = await fake.slash(world.other, world.carol, "session info")
    assert "mode `compat_plus` · tools `off` · memory `on`" in info.text, info.text


async def test_the_reply_policy_switches_through_session_set(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    done = await fake.slash(world.rp, world.gm, "session set", option="policy", value="mention")
    assert done.text == "Set. This session's **policy** is now `mention`."
    await fake.say(world.rp, world.alice, "we wait")
    await fake.wait_idle(quiet=0.3)
    assert service.respond_calls() == []
    await fake.say(world.rp, world.alice, "hello?", mention_bot=True)
    await fake.wait_for(lambda: service.respond_calls(), what="respond on mention")
    info = await fake.slash(world.rp, world.carol, "session info")
    assert "policy `mention` ·" in info.text, info.text


async def test_an_option_choice_is_cut_to_discords_limit(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    long = OptionSpec(name="mode", values=PROMPT_MODES, help="a very long help " * 20)
    service.session_option_specs = lambda: (long,)  # type: ignore[method-assign]
    await start_bot()
    await bind(world)
    names = await fake.autocomplete(
        world.rp, world.gm, "session set", focused="option", option="", value=""
    )
    assert len(names) == 1 and len(names[0]) == CHOICE_NAME_LIMIT
    assert names[0].startswith("mode: a very long help")
