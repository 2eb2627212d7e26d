"""Configuration: the example loads, the environment overrides, bad values stop with exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from bot.config import ConfigError, default_database_path, load_settings
from tests.conftest import ROOT


def test_example_loads_with_every_section() -> None:
    settings = load_settings(ROOT / "config.example.toml", environ={})
    # No url in the example: the database is in the user's data directory, not the cwd.
    assert settings.database.url == f"sqlite+aiosqlite:///{default_database_path()}"
    assert settings.source("database", "url") == "default"
    assert settings.llm.provider == "offline" and settings.uses_offline_model
    assert settings.discord.token is None and settings.telegram.token is None
    assert settings.console.session == "default"


def test_every_example_key_is_commented() -> None:
    lines = (ROOT / "config.example.toml").read_text().splitlines()
    for number, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "[")):
            continue
        previous = lines[number - 1].strip()
        assert previous.startswith("#"), f"key on line {number + 1} has no comment: {line}"


def test_environment_overrides_secrets_and_endpoints() -> None:
    env = {
        "DISCORD_TOKEN": "d-token",
        "TELEGRAM_TOKEN": "123:abc",
        "LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "LLM_API_KEY": "sk-test",
        "LLM_MODEL": "gpt-4o",
        "DATABASE_URL": "postgresql+asyncpg://u@127.0.0.1/db",
        "TAVERNBOT_SECRET_KEY": "s3cret",
    }
    settings = load_settings(ROOT / "config.example.toml", environ=env)
    assert settings.discord.token is not None
    assert settings.discord.token.get_secret_value() == "d-token"
    assert settings.telegram.token is not None
    assert settings.llm.base_url == "http://127.0.0.1:9/v1"
    # The example leaves provider unset, so the endpoint from the environment selects openai.
    assert settings.llm.provider == "openai" and not settings.uses_offline_model
    assert settings.llm.model == "gpt-4o"
    assert settings.database.url.startswith("postgresql+asyncpg://")
    assert settings.security.secret_key is not None


def test_base_url_in_env_selects_openai_when_provider_unset(tmp_path: Path) -> None:
    settings = load_settings(None, environ={"LLM_BASE_URL": "http://127.0.0.1:9/v1"})
    assert settings.llm.provider == "openai" and not settings.uses_offline_model


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ('[llm]\nprovider = "claude"\n', ["llm.provider", "'claude'", "'openai'", "'offline'"]),
        ('[database]\nurl = "mysql://x"\n', ["database.url", "'mysql://x'", "sqlite+aiosqlite"]),
        ("[llm]\ntimeout_s = -1\n", ["llm.timeout_s", "-1", "greater than 0"]),
        ("[llm]\nmax_retries = 99\n", ["llm.max_retries", "99", "less than or equal to 10"]),
        ('[discord]\nreply_policy = "always"\n', ["discord.reply_policy", "'always'"]),
        ('[telegram]\nallowed_users = ["bob"]\n', ["telegram.allowed_users.0", "'bob'"]),
        ('[console]\ncolour = "red"\n', ["unknown key", "console.colour"]),
        ("[discord]\ntoken = 5\n", ["discord.token", "***"]),
        ("[llm\n", ["not valid TOML"]),
    ],
)
def test_invalid_values_name_key_value_and_allowed(
    tmp_path: Path, toml: str, expected: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    message = str(info.value)
    assert str(path) in message
    for part in expected:
        assert part in message, message
    assert "\n" not in message
    # The CLI turns it into one line on stderr and exit code 2.
    assert main(["--config", str(path), "config", "check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "configuration error" in err[0]


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    assert main(["--config", str(tmp_path / "nope.toml"), "config", "check"]) == 2


def test_secrets_are_never_echoed(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[discord]\ntoken = 12345\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, environ={})
    assert "12345" not in str(info.value)


def test_platform_sections_reach_the_adapters(tmp_path: Path) -> None:
    from bot.platforms import discord_options, telegram_config

    path = tmp_path / "platforms.toml"
    path.write_text(
        "[discord]\ntoken = 'd'\ncommand_guilds = [42]\nedit_interval_s = 2.5\n"
        "[telegram]\ntoken = '1:x'\nmode = 'webhook'\nwebhook_port = 9000\n"
        "webhook_secret = 'shh'\nbatch_lines = false\n"
    )
    settings = load_settings(path, environ={})
    discord = discord_options(settings.discord)
    assert discord.command_guilds == (42,) and discord.edit_interval_s == 2.5
    telegram = telegram_config(settings.telegram)
    assert telegram.webhook_port == 9000 and telegram.webhook_secret == "shh"
    assert telegram.batch_lines is False and telegram.mode == "webhook"
