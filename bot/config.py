"""Configuration: one TOML file plus environment overrides, validated once at start.

The file is optional (every key has a default); secrets and endpoints can come from the
environment instead (``DISCORD_TOKEN``, ``TELEGRAM_TOKEN``, ``LLM_BASE_URL``, ``LLM_API_KEY``,
``LLM_MODEL``, ``DATABASE_URL``, ``TAVERNBOT_SECRET_KEY``, and ``TAVERNBOT_SESSION_<KEY>`` for
each key of ``[session]``), which win over the file: a value set in the file and the same
value set by its variable mean the same thing. :meth:`Settings.source` names where each value
came from (the variable, the file, or the default). The database defaults to a file in the
user's data directory (``platformdirs``), whatever the working directory. A bad
value raises :class:`ConfigError` whose message names the key, the value and what is allowed;
the CLI turns it into exit code 2.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from platformdirs import user_data_dir
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from engine.errors import ConfigurationError
from engine.redaction import redact_text, redact_url
from engine.timeline.leases import LEASE_EXPIRY_S, LEASE_HEARTBEAT_S
from engine.turns.options import MAX_MEMORY_BUDGET, SessionDefaults, parse_option

DEFAULT_CONFIG_FILE = Path("tavernbot.toml")
APP_NAME: Final = "tavernbot"
"""The directory name under the user's data directory (``platformdirs``)."""
DATABASE_FILE_NAME: Final = "tavernbot.db"
"""The SQLite file of the default database, in :func:`default_database_path`'s directory."""
DEFAULT_SOURCE: Final = "default"
"""How :meth:`Settings.source` names a value nobody set."""


def default_database_path() -> Path:
    """Where the database lives when no ``[database] url`` / ``DATABASE_URL`` is given: the
    user's data directory, so every working directory shares one database."""
    return Path(user_data_dir(APP_NAME, appauthor=False)) / DATABASE_FILE_NAME


def default_database_url() -> str:
    """The SQLAlchemy URL of :func:`default_database_path`."""
    return f"sqlite+aiosqlite:///{default_database_path()}"


def database_location(url: str) -> str:
    """The database as a person would name it: the file path of a SQLite URL, the URL (with
    its password hidden) otherwise."""
    sqlite = "sqlite+aiosqlite:///"
    if url.startswith(sqlite):
        return str(Path(url.removeprefix(sqlite).partition("?")[0]).expanduser())
    return redact_url(url)


ENV_OVERRIDES: Mapping[str, tuple[str, str]] = {
    "DISCORD_TOKEN": ("discord", "token"),
    "TELEGRAM_TOKEN": ("telegram", "token"),
    "LLM_BASE_URL": ("llm", "base_url"),
    "LLM_API_KEY": ("llm", "api_key"),
    "LLM_MODEL": ("llm", "model"),
    "DATABASE_URL": ("database", "url"),
    "TAVERNBOT_SECRET_KEY": ("security", "secret_key"),
    "TAVERNBOT_SESSION_PROMPT_MODE": ("session", "prompt_mode"),
    "TAVERNBOT_SESSION_TOOLS": ("session", "tools"),
    "TAVERNBOT_SESSION_MEMORY": ("session", "memory"),
    "TAVERNBOT_SESSION_MEMORY_BUDGET": ("session", "memory_budget"),
    "TAVERNBOT_MEMORY_STORY_DATE_VARIABLE": ("memory", "story_date_variable"),
    "TAVERNBOT_SESSION_MACRO_MODE": ("session", "macro_mode"),
    "TAVERNBOT_SESSION_REPLY_POLICY": ("session", "reply_policy"),
    "TAVERNBOT_WEB_TOKEN": ("web", "token"),
}


MAX_SHARD_COUNT: Final = 1024
"""The most ``[discord] shard_count`` may be (Discord asks for a shard per 2,500 guilds, so
this is far beyond any bot of this kind; a larger value is a typo)."""
SECRET_KEY_WORDS: Final = ("token", "key", "secret", "password")
"""A setting whose name contains one of these never has its value echoed in an error."""


class ConfigError(Exception):
    """The configuration is invalid; ``str()`` is the one message shown to the user."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatabaseSettings(_Section):
    """Where every turn is kept."""

    url: str = Field(default_factory=default_database_url)
    echo: bool = False
    lease_heartbeat_s: float = Field(default=LEASE_HEARTBEAT_S, gt=0)
    """Seconds between two renewals of a process's lease (and sweeps for dead processes'
    turns)."""
    lease_expiry_s: float = Field(default=LEASE_EXPIRY_S, gt=0)
    """Seconds after its last renewal when a process's lease is dead and its generating
    floors may be failed by another process; must be above ``lease_heartbeat_s``."""

    @field_validator("url")
    @classmethod
    def _known_driver(cls, value: str) -> str:
        if not value.startswith(("sqlite+aiosqlite://", "postgresql+asyncpg://")):
            raise ValueError("must start with 'sqlite+aiosqlite://' or 'postgresql+asyncpg://'")
        return value

    @model_validator(mode="after")
    def _lease_order(self) -> DatabaseSettings:
        if self.lease_heartbeat_s >= self.lease_expiry_s:
            raise ValueError(
                f"lease_heartbeat_s ({self.lease_heartbeat_s}) must be below lease_expiry_s "
                f"({self.lease_expiry_s})"
            )
        return self


class LLMSettings(_Section):
    """The model endpoint; ``offline`` needs no network and answers deterministically."""

    provider: Literal["openai", "offline"] = "offline"
    """Unset, it becomes "openai" as soon as ``base_url`` is given (file or environment)."""
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str = "gpt-4o-mini"
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    embeddings_model: str | None = None
    """An embedding model (e.g. ``text-embedding-3-small``): memory then ranks by BM25 fused
    with embeddings. Unset: BM25 alone."""
    embeddings_base_url: str | None = None
    """The OpenAI-compatible endpoint of ``embeddings_model``; unset: ``base_url``."""
    embeddings_api_key: SecretStr | None = None
    """The key for ``embeddings_base_url``; unset: ``api_key``."""


class DiscordSettings(_Section):
    """Discord bot credentials and optional endpoints (a REST proxy or a test server)."""

    token: SecretStr | None = None
    api_base: str | None = None
    gateway_url: str | None = None
    game_master_role: str = "Game Master"
    allow_dms: bool = True
    reply_policy: Literal["every_message", "mention", "quiet_period"] = "quiet_period"
    quiet_period_s: float = Field(default=8.0, ge=0)
    channels: dict[str, str] = Field(default_factory=dict)
    members_intent: bool = False
    command_guilds: list[int] = Field(default_factory=list)
    edit_interval_s: float = Field(default=1.0, gt=0)
    edit_rate_per_s: float = Field(default=20.0, gt=0)
    shard_count: int | None = Field(default=None, ge=1, le=MAX_SHARD_COUNT)
    """Shards of the whole bot (every process the same); unset: one unsharded connection."""
    shard_ids: list[int] = Field(default_factory=list)
    """The shards this process serves, each in ``0..shard_count-1``; empty: all of them."""

    @field_validator("shard_ids")
    @classmethod
    def _shards_of_the_count(cls, value: list[int], info: ValidationInfo) -> list[int]:
        count: int | None = info.data.get("shard_count")
        if not value:
            return value
        if count is None:
            raise ValueError("needs shard_count (the number of shards of the whole bot)")
        if any(not 0 <= shard < count for shard in value):
            raise ValueError(f"each shard id must be between 0 and shard_count - 1 ({count - 1})")
        if len(set(value)) != len(value):
            raise ValueError("lists a shard twice; each process serves distinct shards")
        return value


class TelegramSettings(_Section):
    """Telegram bot credentials and an optional self-hosted Bot API server."""

    token: SecretStr | None = None
    api_base: str | None = None
    mode: Literal["polling", "webhook"] = "polling"
    webhook_url: str | None = None
    webhook_host: str = "127.0.0.1"
    webhook_port: int = Field(default=8443, ge=1, le=65535)
    webhook_path: str = "/telegram"
    webhook_secret: SecretStr | None = None
    allowed_users: list[int] = Field(default_factory=list)
    batch_lines: bool = True
    leader_lease_s: float = Field(default=30.0, gt=0)
    """With several polling processes on one PostgreSQL database: how long the poller role
    lasts unrenewed (a killed leader is replaced after it)."""


class ConsoleSettings(_Section):
    """The terminal chat used when no platform is configured."""

    session: str = "default"
    user: str = "User"
    character: str | None = None


class SessionSection(_Section):
    """What every newly created session starts with, on every front end (a session keeps
    its own settings once created; ``/set`` and ``/session set`` change them)."""

    prompt_mode: str = "compat_plus"
    tools: bool = False
    memory: bool = True
    memory_budget: int | None = Field(default=None, ge=0, le=MAX_MEMORY_BUDGET)
    macro_mode: str = "read_only"
    reply_policy: str | None = None

    @field_validator("prompt_mode", "macro_mode", "reply_policy")
    @classmethod
    def _known_word(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        option = {"prompt_mode": "mode", "macro_mode": "macros"}.get(
            info.field_name or "", "policy"
        )
        try:
            return str(parse_option(option, value)[1])
        except ConfigurationError as exc:
            # "session option mode must be one of ..." -> "must be one of ...": the key is named
            # already, as the config calls it.
            raise ValueError("must " + str(exc).partition(" must ")[2]) from None

    def defaults(self) -> SessionDefaults:
        """The engine's :class:`~engine.turns.options.SessionDefaults` for these values."""
        return SessionDefaults(
            prompt_mode=self.prompt_mode,
            tools=self.tools,
            memory=self.memory,
            memory_budget=self.memory_budget,
            macro_mode=self.macro_mode,
            reply_policy=self.reply_policy,
        )


class SecuritySettings(_Section):
    """Key used to encrypt model API keys at rest; storing a key is refused without it."""

    secret_key: SecretStr | None = None


class WebSettings(_Section):
    """The web page (``adapters.web``): served by ``tavernbot run`` and ``tavernbot web``.
    Off the loopback host it should speak TLS (``tls_cert``/``tls_key``) or sit behind a TLS
    reverse proxy (``behind_proxy``); otherwise a warning is logged and ``config check``
    says so."""

    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    token: SecretStr | None = None
    """An admin token of every realm, besides the generated ones (stored hashed)."""
    tls_cert: str | None = None
    tls_key: str | None = None
    behind_proxy: bool = False

    @model_validator(mode="after")
    def _tls_pair(self) -> WebSettings:
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("tls_cert and tls_key go together: set both or neither")
        return self


class MemorySettingsSection(_Section):
    """Long-term memory across sessions: where the in-story date of a turn is read from
    (``engine.memory.story_dates``; ``""`` turns story dates off)."""

    story_date_variable: str = Field(default="date", max_length=100)


class Settings(_Section):
    """The whole validated configuration."""

    database: DatabaseSettings = DatabaseSettings()
    llm: LLMSettings = LLMSettings()
    discord: DiscordSettings = DiscordSettings()
    telegram: TelegramSettings = TelegramSettings()
    console: ConsoleSettings = ConsoleSettings()
    session: SessionSection = SessionSection()
    security: SecuritySettings = SecuritySettings()
    web: WebSettings = WebSettings()
    memory: MemorySettingsSection = MemorySettingsSection()
    _sources: dict[tuple[str, str], str] = PrivateAttr(default_factory=dict)
    _config_file: Path | None = PrivateAttr(default=None)

    @property
    def config_file(self) -> Path | None:
        """The config file that was read, or None (defaults and environment only)."""
        return self._config_file

    def source(self, section: str, key: str) -> str:
        """Where ``[section] key`` came from: ``environment variable NAME``, the config file's
        path, or ``default``."""
        return self._sources.get((section, key), DEFAULT_SOURCE)

    @property
    def uses_offline_model(self) -> bool:
        """True when no model endpoint is configured (the offline provider answers)."""
        return self.llm.provider == "offline" or not self.llm.base_url


def console_card(settings: Settings) -> tuple[str, bytes] | None:
    """The card named by ``[console] character`` as (file name, bytes), or None when unset.

    A relative path is taken from the config file's directory. A missing or unreadable file
    (or one over the CLI's file size limit) raises :class:`ConfigError` naming the key, the
    path and where the key was set."""
    from bot.cli_commands.chat import MAX_FILE_BYTES

    name = settings.console.character
    if not name:
        return None
    source = settings.source("console", "character")
    path = Path(name).expanduser()
    if not path.is_absolute() and settings.config_file is not None:
        path = settings.config_file.parent / path
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"{source}: [console] character: cannot read {path}: {reason}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(
            f"{source}: [console] character: {path} is over MAX_FILE_BYTES={MAX_FILE_BYTES}"
        )
    return path.name, data


def load_settings(
    path: Path | None = None, *, environ: Mapping[str, str] | None = None
) -> Settings:
    """Read ``path`` (or ``tavernbot.toml`` when present), apply the environment, validate.

    Raises :class:`ConfigError` with one human message on any problem.
    """
    env = os.environ if environ is None else environ
    source = "defaults"
    raw: dict[str, Any] = {}
    if path is None and DEFAULT_CONFIG_FILE.exists():
        path = DEFAULT_CONFIG_FILE
    if path is not None:
        source = str(path)
        try:
            raw = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"{path}: config file not found") from exc
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    origins: dict[tuple[str, str], str] = {
        (section, key): source
        for section, table in raw.items()
        if isinstance(table, dict)
        for key in table
    }
    for var, (section, key) in ENV_OVERRIDES.items():
        value = env.get(var)
        if value:
            target = raw.setdefault(section, {})
            if not isinstance(target, dict):
                raise ConfigError(
                    f"{source}: [{section}] must be a table, got {type(target).__name__}"
                )
            target[key] = value
            origins[(section, key)] = f"environment variable {var}"
    # A provider left unset becomes "openai" as soon as an endpoint is given, by the file or
    # by the environment alike; the provider then comes from wherever the endpoint came from.
    llm = raw.get("llm")
    if isinstance(llm, dict) and llm.get("base_url") and "provider" not in llm:
        llm["provider"] = "openai"
        origins[("llm", "provider")] = origins[("llm", "base_url")]
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, source, origins)) from None
    settings._sources.update(origins)
    settings._config_file = path
    return settings


def _describe(exc: ValidationError, source: str, origins: Mapping[tuple[str, str], str]) -> str:
    """One line: where the bad value came from (the file, or the environment variable that
    set it), which key, what value and what is allowed (the first error pydantic found).

    Values never leak secrets: an unknown key's value is not repeated at all (a misspelt
    ``apikey`` holds a key), a secret-looking key's value is ``***``, and a URL is shown with
    its credentials hidden."""
    err = exc.errors()[0]
    loc = tuple(str(part) for part in err["loc"])
    key = ".".join(loc)
    where = origins.get((loc[0], loc[1]), source) if len(loc) >= 2 else source
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"{where}: unknown key '{key}' (value not shown); see config.example.toml"
    allowed = err["msg"]
    if isinstance(allowed, str) and allowed.startswith("Value error, "):
        allowed = allowed.removeprefix("Value error, ")
    return f"{where}: invalid value {_shown_value(key, err.get('input'))} for '{key}': {allowed}"


def _shown_value(key: str, value: Any) -> str:
    """How a bad value may be echoed: ``***`` for a secret, a URL without its credentials."""
    if any(word in key.lower() for word in SECRET_KEY_WORDS):
        return "***"
    return repr(redact_text(value)) if isinstance(value, str) else repr(value)


def describe_embeddings(settings: Settings) -> str:
    """Which embedding model memory uses, as ``config check`` says it: ``MODEL at URL`` or
    ``none (memory ranks with BM25 alone)``."""
    llm = settings.llm
    url = llm.embeddings_base_url or llm.base_url
    if not llm.embeddings_model:
        return "none (memory ranks with BM25 alone)"
    if not url:
        return f"{llm.embeddings_model}, but no base_url: BM25 alone"
    return f"{llm.embeddings_model} at {redact_url(url)}"


def describe_model(settings: Settings) -> str:
    """Which model answers and the settings that chose it, as ``config check`` and the start
    of ``run``/``chat`` say it: ``gpt-4o-mini at URL (base_url from FILE, model from
    default)`` or ``offline provider (no base_url)``."""
    base_url = settings.llm.base_url
    if settings.uses_offline_model or base_url is None:
        why = (
            f"provider = 'offline' from {settings.source('llm', 'provider')}"
            if base_url
            else "no base_url"
        )
        return f"offline provider ({why})"
    return (
        f"{settings.llm.model} at {redact_url(base_url)} "
        f"(base_url from {settings.source('llm', 'base_url')}, "
        f"model from {settings.source('llm', 'model')})"
    )
