"""Session options under their user-facing names (issue 13): parsing with one-line errors,
set/info round trips on the real service and on the fake, and the defaults new sessions take."""

from __future__ import annotations

import pytest

from adapters.storage import SqlStorage
from engine.errors import ConfigurationError
from engine.turns.api import SessionKey
from engine.turns.options import (
    DEFAULT_MEMORY_BUDGET,
    MAX_MEMORY_BUDGET,
    SESSION_OPTION_SPECS,
    SessionDefaults,
    option_lines,
    parse_option,
)
from engine.turns.service import TavernService
from tests.fakes.roleplay import FakeRoleplayService
from tests.test_turns.conftest import KEY, Recorder, offline_service

OTHER = SessionKey(platform="console", realm="local", key="other")


def test_the_options_are_listed_in_order_with_their_values() -> None:
    names = [s.name for s in SESSION_OPTION_SPECS]
    assert names == ["mode", "tools", "memory", "budget", "macros", "policy", "global_writes"]
    by_name = {s.name: s for s in SESSION_OPTION_SPECS}
    assert by_name["mode"].values == ("compat_strict", "compat_plus", "native")
    assert by_name["tools"].values == ("on", "off")
    assert by_name["budget"].values == ()
    assert all(s.help and "\n" not in s.help for s in SESSION_OPTION_SPECS)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("mode", "Compat_Plus", "compat_plus"),
        ("prompt_mode", "native", "native"),
        ("tools", "ON", True),
        ("tools", "false", False),
        ("memory", "no", False),
        ("memory", "1", True),
        ("global_writes", "yes", True),
        ("budget", "750", 750),
        ("memory_budget", " 0 ", 0),
        ("macros", "FULL", "full"),
        ("policy", "mention", "mention"),
        ("reply_policy", "quiet_period", "quiet_period"),
    ],
)
def test_values_are_read_case_insensitively(name: str, value: str, expected: object) -> None:
    assert parse_option(name, value)[1] == expected


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "mode",
            "fast",
            "session option mode must be one of compat_strict, compat_plus, native, not 'fast'",
        ),
        (
            "moode",
            "native",
            "unknown session option 'moode'; options: mode, tools, memory, budget, macros, "
            "policy, global_writes",
        ),
        ("tools", "maybe", "session option tools must be on or off, not 'maybe'"),
        ("budget", "-1", "from 0 to MAX_MEMORY_BUDGET=32000, not '-1'"),
        ("budget", "lots", "not 'lots'"),
        ("policy", "always", "every_message, mention, quiet_period"),
    ],
)
def test_a_bad_option_or_value_is_one_line(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_option(name, value)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_budget_limit_is_hit_exactly() -> None:
    assert parse_option("budget", str(MAX_MEMORY_BUDGET))[1] == MAX_MEMORY_BUDGET
    with pytest.raises(ConfigurationError, match="MAX_MEMORY_BUDGET"):
        parse_option("budget", str(MAX_MEMORY_BUDGET + 1))


def test_bad_defaults_are_refused_naming_the_field() -> None:
    with pytest.raises(ConfigurationError, match="mode must be one of"):
        SessionDefaults(prompt_mode="loud")
    with pytest.raises(ConfigurationError, match="budget"):
        SessionDefaults(memory_budget=MAX_MEMORY_BUDGET + 1)
    with pytest.raises(ConfigurationError, match="policy"):
        SessionDefaults(reply_policy="never")


async def test_a_new_session_takes_the_defaults_and_shows_them(
    storage: SqlStorage, events: Recorder
) -> None:
    svc = offline_service(storage, events)
    info = await svc.open_session(KEY)
    assert (info.prompt_mode, info.tools, info.memory) == ("compat_plus", False, True)
    assert info.memory_budget == DEFAULT_MEMORY_BUDGET
    assert option_lines(info) == [
        ("mode", "compat_plus"),
        ("tools", "off"),
        ("memory", "on"),
        ("budget", str(DEFAULT_MEMORY_BUDGET)),
        ("macros", "read_only"),
        ("policy", "default"),
        ("global_writes", "off"),
    ]


async def test_set_and_info_round_trip_on_the_real_service(
    storage: SqlStorage, events: Recorder
) -> None:
    svc = offline_service(storage, events)
    await svc.open_session(KEY)
    await svc.open_session(OTHER)
    assert svc.session_option_specs() == SESSION_OPTION_SPECS
    await svc.set_session_option(KEY, "mode", "native")
    await svc.set_session_option(KEY, "tools", "on")
    await svc.set_session_option(KEY, "memory", "off")
    await svc.set_session_option(KEY, "budget", "900")
    await svc.set_session_option(KEY, "macros", "off")
    await svc.set_session_option(KEY, "policy", "mention")
    info = await svc.set_session_option(KEY, "global_writes", "on")
    assert dict(option_lines(info)) == {
        "mode": "native",
        "tools": "on",
        "memory": "off",
        "budget": "900",
        "macros": "off",
        "policy": "mention",
        "global_writes": "on",
    }
    assert await svc.tools_global_writes(KEY)
    # Another process reads the same settings back; the other session kept its own.
    again = offline_service(storage, events)
    assert option_lines(await again.session_info(KEY)) == option_lines(info)
    other = await again.session_info(OTHER)
    assert (other.prompt_mode, other.tools, other.memory) == ("compat_plus", False, True)
    # The old long names still work.
    info = await svc.set_session_option(KEY, "prompt_mode", "compat_strict")
    assert info.prompt_mode == "compat_strict"
    with pytest.raises(ConfigurationError, match="session option tools must be on or off"):
        await svc.set_session_option(KEY, "tools", "sometimes")
    assert (await svc.session_info(KEY)).tools


async def test_tools_on_keeps_the_rest_of_the_tool_policy(service: TavernService) -> None:
    await service.configure(KEY, tools={"enabled": False, "max_steps": 2, "deny": {"*": ["roll"]}})
    await service.set_session_option(KEY, "tools", "on")
    session = await service.parts.sessions.settings(
        (await service.parts.sessions.ids(KEY)).session_id
    )
    assert session.settings.extra["tools"] == {
        "enabled": True,
        "max_steps": 2,
        "deny": {"*": ["roll"]},
    }


async def test_changing_the_defaults_changes_new_sessions_only(
    storage: SqlStorage, events: Recorder
) -> None:
    first = offline_service(storage, events)
    await first.open_session(KEY)
    changed = SessionDefaults(
        prompt_mode="native", tools=True, memory=False, memory_budget=1200, macro_mode="full"
    )
    svc = offline_service(storage, events, session_defaults=changed)
    kept = await svc.open_session(KEY)  # exists: keeps what it was created with
    assert (kept.prompt_mode, kept.tools, kept.memory) == ("compat_plus", False, True)
    new = await svc.open_session(OTHER)
    assert (new.prompt_mode, new.tools, new.memory, new.memory_budget, new.macro_mode) == (
        "native",
        True,
        False,
        1200,
        "full",
    )


async def test_the_fake_service_takes_and_reports_options_the_same_way() -> None:
    fake = FakeRoleplayService(session_defaults=SessionDefaults(tools=True))
    info = await fake.open_session(KEY)
    assert (info.prompt_mode, info.tools, info.memory) == ("compat_plus", True, True)
    info = await fake.set_session_option(KEY, "memory", "off")
    info = await fake.set_session_option(KEY, "mode", "NATIVE")
    assert dict(option_lines(info))["memory"] == "off"
    assert info.prompt_mode == "native"
    assert fake.session_option_specs() == SESSION_OPTION_SPECS
    with pytest.raises(ConfigurationError) as caught:
        await fake.set_session_option(KEY, "mode", "fast")
    assert str(caught.value) == (
        "session option mode must be one of compat_strict, compat_plus, native, not 'fast'"
    )
