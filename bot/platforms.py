"""The platform front ends' settings, built from the configuration's typed sections.

Each adapter takes its own frozen settings dataclass and knows nothing of the configuration file;
this module maps ``[discord]`` and ``[telegram]`` onto them field by field (secrets unwrapped),
so a setting added to one side and not the other is a type error here, not a silent default.
The adapters are imported when their settings are built: a deployment without Discord never
loads discord.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.config import DiscordSettings, TelegramSettings

if TYPE_CHECKING:
    from adapters.discord.options import DiscordOptions
    from adapters.storage import SqlStorage
    from adapters.storage.telegram_repo import SqlTelegramCoordination
    from adapters.telegram.config import TelegramConfig


def discord_options(section: DiscordSettings) -> DiscordOptions:
    """The Discord front end's options from ``[discord]`` (an unset token becomes empty, which
    the runner refuses with a message naming the setting)."""
    from adapters.discord.options import DiscordOptions

    return DiscordOptions(
        token=section.token.get_secret_value() if section.token is not None else "",
        api_base=section.api_base,
        gateway_url=section.gateway_url,
        game_master_role=section.game_master_role,
        allow_dms=section.allow_dms,
        reply_policy=section.reply_policy,
        quiet_period_s=section.quiet_period_s,
        channels=dict(section.channels),
        members_intent=section.members_intent,
        command_guilds=tuple(section.command_guilds),
        edit_interval_s=section.edit_interval_s,
        edit_rate_per_s=section.edit_rate_per_s,
        shard_count=section.shard_count,
        shard_ids=tuple(section.shard_ids),
    )


def telegram_config(section: TelegramSettings) -> TelegramConfig:
    """The Telegram front end's settings from ``[telegram]``; ValueError when the token is
    not set (the runner cannot start without one)."""
    from adapters.telegram.config import TelegramConfig

    token = section.token.get_secret_value() if section.token is not None else ""
    if not token:
        raise ValueError("[telegram] token is not set")
    secret = section.webhook_secret
    return TelegramConfig(
        token=token,
        api_base=section.api_base,
        mode=section.mode,
        webhook_url=section.webhook_url,
        webhook_host=section.webhook_host,
        webhook_port=section.webhook_port,
        webhook_path=section.webhook_path,
        webhook_secret=secret.get_secret_value() if secret is not None else None,
        allowed_users=frozenset(section.allowed_users),
        batch_lines=section.batch_lines,
        leader_lease_s=section.leader_lease_s,
    )


def telegram_coordination(storage: SqlStorage | None) -> SqlTelegramCoordination | None:
    """What lets several processes serve one Telegram bot: the shared update ledger and the
    poller role, on PostgreSQL; None on SQLite, which serves one process (its own memory of
    seen updates is enough there)."""
    if storage is None or storage.engine.dialect.name != "postgresql":
        return None
    from adapters.storage.telegram_repo import SqlTelegramCoordination

    return SqlTelegramCoordination(storage.engine)
