"""``tavernbot doctor``: check the configuration, the database, the platform tokens and the
model endpoint, and say plainly what is wrong. Exit 0 when everything works, 1 otherwise."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TextIO

from bot.cli_commands import Subcommands
from engine.redaction import redact_text, redact_url

if TYPE_CHECKING:  # loaded when the command runs, so ``tavernbot --help`` stays fast
    from openai import AsyncOpenAI
    from pydantic import SecretStr

    from bot.cli_commands.token_checks import TokenCheck
    from bot.config import Settings

DISCORD_TOKEN: Final = re.compile(r"^[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{20,}$")
TELEGRAM_TOKEN: Final = re.compile(r"^\d{5,}:[A-Za-z0-9_-]{30,}$")
ENDPOINT_TIMEOUT_S: Final = 10.0
"""How long the model endpoint gets to list its models."""


def register(sub: Subcommands) -> None:
    """Add the ``doctor`` command."""
    parser = sub.add_parser("doctor", help="check the configuration and connections")
    parser.set_defaults(handler=_doctor)


class Report:
    """Collects one line per check."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.failed = 0

    def ok(self, what: str, detail: str) -> None:
        self.out.write(f"ok    {what}: {detail}\n")

    def warn(self, what: str, detail: str) -> None:
        self.out.write(f"warn  {what}: {detail}\n")

    def fail(self, what: str, detail: str) -> None:
        self.failed += 1
        self.out.write(f"FAIL  {what}: {detail}\n")


def _doctor(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from bot.cli import settings_from
    from bot.config import ConfigError

    report = Report(out or sys.stdout)
    try:
        settings = settings_from(args)
    except ConfigError as exc:
        report.fail("config", str(exc))
        return 1
    report.ok("config", f"loaded ({settings.config_file or 'no file: defaults and environment'})")
    return asyncio.run(check(settings, report))


async def check(settings: Settings, report: Report) -> int:
    """Run every check; returns the exit code."""
    await _database(settings.database.url, report, source=settings.source("database", "url"))
    from bot.cli_commands.token_checks import check_discord, check_telegram

    discord = _token(
        report, "discord token", settings.discord.token, DISCORD_TOKEN, "three dot-separated parts"
    )
    if discord:  # well-formed: one authenticated call says whether Discord takes it
        _live(report, "discord token", await check_discord(discord, settings.discord.api_base))
    telegram = _token(
        report, "telegram token", settings.telegram.token, TELEGRAM_TOKEN, "<digits>:<secret>"
    )
    if telegram:
        _live(report, "telegram token", await check_telegram(telegram, settings.telegram.api_base))
    if settings.security.secret_key is None:
        report.warn("secret key", "TAVERNBOT_SECRET_KEY is not set: API keys cannot be stored")
    else:
        report.ok("secret key", "set")
    await _endpoint(settings, report)
    return 1 if report.failed else 0


async def _database(url: str, report: Report, *, source: str = "default") -> None:
    from sqlalchemy.engine import make_url

    from adapters.storage import create_engine
    from adapters.storage.migrate import current_revision, head_revision
    from bot.config import database_location

    shown = redact_url(make_url(url).render_as_string(hide_password=True))
    report.ok("database location", f"{database_location(url)} (from {source})")
    try:
        engine = create_engine(url)  # makes a SQLite database's folder, which can fail
    except (OSError, ValueError) as exc:
        from bot.startup import database_failure

        report.fail("database", str(database_failure(url, exc)))
        return
    try:
        current = await asyncio.wait_for(current_revision(engine), ENDPOINT_TIMEOUT_S)
    except Exception as exc:  # any driver error is reported, not raised
        report.fail(
            "database", f"cannot open {shown}: {type(exc).__name__}: {redact_text(str(exc))}"
        )
        return
    finally:
        await engine.dispose()
    head = head_revision()
    if current == head:
        report.ok("database", f"{shown} at revision {head}")
    elif current is None:
        report.warn("database", f"{shown} is empty; `tavernbot run` or `db upgrade` creates it")
    else:
        report.warn("database", f"{shown} is at {current}, {head} is newest: run `db upgrade`")


def _token(
    report: Report, what: str, value: SecretStr | None, pattern: re.Pattern[str], shape: str
) -> str | None:
    """Report a token that is not set or malformed; returns a well-formed one (to try live)."""
    secret = value.get_secret_value() if value is not None else ""
    if not secret:
        report.ok(what, "not configured (platform off)")
    elif pattern.match(secret.strip()):
        return secret.strip()
    else:
        report.fail(what, f"does not look like a token ({shape}); check for stray characters")
    return None


def _live(report: Report, what: str, found: TokenCheck) -> None:
    (report.ok if found.ok else report.fail)(what, found.detail)


async def _endpoint(
    settings: Settings, report: Report, *, client: Callable[..., AsyncOpenAI] | None = None
) -> None:
    llm = settings.llm
    base_url = llm.base_url
    if settings.uses_offline_model or base_url is None:
        if base_url and llm.provider == "offline":
            report.warn(
                "model",
                f"provider = 'offline' (from {settings.source('llm', 'provider')}) wins over "
                f"base_url (from {settings.source('llm', 'base_url')}): the offline provider "
                "answers; remove provider or set it to 'openai'",
            )
        else:
            report.warn(
                "model", "no endpoint configured: the offline provider answers (demo only)"
            )
        return
    origin = (
        f"base_url from {settings.source('llm', 'base_url')}, "
        f"model from {settings.source('llm', 'model')}"
    )
    from openai import APIConnectionError, APIStatusError, AsyncOpenAI

    key = llm.api_key.get_secret_value() if llm.api_key is not None else "no-key"
    where = redact_url(base_url)
    api = (client or AsyncOpenAI)(base_url=base_url, api_key=key, max_retries=0)
    try:
        page = await asyncio.wait_for(api.models.list(), ENDPOINT_TIMEOUT_S)
        names = [m.id for m in page.data]
    except APIStatusError as exc:
        hint = {401: "the API key was refused", 403: "the API key may not list models"}
        report.fail(
            "model",
            f"{where} answered {exc.status_code}: "
            f"{hint.get(exc.status_code, 'see the server log')}",
        )
        return
    except (APIConnectionError, TimeoutError) as exc:
        report.fail("model", f"cannot reach {where}: {type(exc).__name__}")
        return
    finally:
        await api.close()
    if llm.model in names:
        report.ok("model", f"{where} serves {llm.model} ({origin})")
    elif names:
        report.fail(
            "model",
            f"{where} does not list {llm.model!r} ({origin}); it has {', '.join(names[:10])}",
        )
    else:
        report.warn("model", f"{where} answered but lists no models")
