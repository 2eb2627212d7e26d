"""DiscordOptions from the project's [discord] config section."""

from __future__ import annotations

import pytest

from adapters.discord.options import DiscordOptions
from adapters.discord.runner import DiscordRunner
from bot.config import load_settings
from engine.errors import ConfigurationError
from tests.fakes.roleplay import FakeRoleplayService


def test_options_come_from_the_config_section(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "tavernbot.toml"
    path.write_text(
        '[discord]\ntoken = "abc"\napi_base = "http://127.0.0.1:9/api/v10"\n'
        'reply_policy = "mention"\nquiet_period_s = 3\nchannels = { "42" = "Aqua" }\n'
    )
    settings = load_settings(path, environ={})
    options = DiscordOptions.from_config(settings.discord, members_intent=True)
    assert options.token == "abc" and options.reply_policy == "mention"
    assert options.api_base == "http://127.0.0.1:9/api/v10" and options.gateway_url is None
    assert dict(options.channels) == {"42": "Aqua"} and options.quiet_period_s == 3
    assert options.game_master_role == "Game Master" and options.members_intent


def test_an_empty_token_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="token is empty"):
        DiscordRunner(FakeRoleplayService(), DiscordOptions(token=""))
