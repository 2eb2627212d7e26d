"""DiscordOptions from the project's [discord] config section (and every platform section
reaching its adapter's settings)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from pydantic import BaseModel, SecretStr

from adapters.discord.options import DiscordOptions
from adapters.discord.runner import DiscordRunner
from bot.config import DiscordSettings, TelegramSettings, load_settings
from bot.platforms import discord_options, telegram_config
from engine.errors import ConfigurationError
from tests.fakes.roleplay import FakeRoleplayService


def test_options_come_from_the_config_section(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "tavernbot.toml"
    path.write_text(
        '[discord]\ntoken = "abc"\napi_base = "http://127.0.0.1:9/api/v10"\n'
        'reply_policy = "mention"\nquiet_period_s = 3\nchannels = { "42" = "Aqua" }\n'
    )
    settings = load_settings(path, environ={})
    options = replace(discord_options(settings.discord), members_intent=True)
    assert options.token == "abc" and options.reply_policy == "mention"
    assert options.api_base == "http://127.0.0.1:9/api/v10" and options.gateway_url is None
    assert dict(options.channels) == {"42": "Aqua"} and options.quiet_period_s == 3
    assert options.game_master_role == "Game Master" and options.members_intent


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="token is empty"):
        DiscordRunner(FakeRoleplayService(), DiscordOptions(token=""))


def _plain(value: object) -> object:
    """A setting's value as both sides can compare it (secrets unwrapped, sequences as lists)."""
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, tuple | frozenset):
        return sorted(value)
    return value


@pytest.mark.parametrize(
    ("section", "build"),
    [
        (
            DiscordSettings(
                token="t",
                api_base="http://127.0.0.1:9/api/v10",
                gateway_url="ws://127.0.0.1:9/",
                game_master_role="Keeper",
                allow_dms=False,
                reply_policy="mention",
                quiet_period_s=1.5,
                channels={"42": "Aqua"},
                members_intent=True,
                command_guilds=[7],
                edit_interval_s=2.5,
                edit_rate_per_s=3.0,
                shard_count=3,
                shard_ids=[2],
            ),
            discord_options,
        ),
        (
            TelegramSettings(
                token="1:x",
                api_base="http://127.0.0.1:9",
                mode="webhook",
                webhook_url="https://example.test/hook",
                webhook_host="0.0.0.0",
                webhook_port=9000,
                webhook_path="/tg",
                webhook_secret="shh",
                allowed_users=[5],
                batch_lines=False,
                leader_lease_s=12.0,
            ),
            telegram_config,
        ),
    ],
    ids=["discord", "telegram"],
)
def test_every_platform_setting_reaches_its_adapter(section: BaseModel, build: Any) -> None:
    built = build(section)
    defaults = type(built)(token="default")
    for name in type(section).model_fields:
        value = getattr(section, name)
        assert _plain(getattr(built, name)) == _plain(value), name
        if name != "token":  # the test's values differ from the adapter's own defaults
            assert _plain(getattr(defaults, name)) != _plain(value), name
