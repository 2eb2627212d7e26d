"""The ``tavernbot`` command line.

Each command group lives in its own module under :mod:`bot.cli_commands` and exposes
``register(subparsers)``; this module lists them, parses, and maps errors to exit codes
(one line on standard error, never a traceback, for every expected failure):
0 success, 1 failure, 2 bad configuration or usage (a refused token among them),
3 a service could not be reached (the database, Telegram, Discord), 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from bot.cli_commands import (
    Subcommands,
    chat,
    config,
    db,
    doctor,
    exports,
    imports,
    macros,
    memory,
    prompt,
    run,
    web,
)
from bot.config import ConfigError, Settings, load_settings
from engine.errors import ConfigurationError as EngineConfigurationError
from engine.errors import EngineError, UnavailableError
from engine.redaction import RedactingFilter

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3
"""A service the bot needs (the database, a platform API) could not be reached."""
EXIT_INTERRUPTED = 130

Handler = Callable[[argparse.Namespace], "int | None"]
"""What a command's parser sets as ``handler``: runs the command, returns its exit code."""

COMMANDS: Final[tuple[Callable[[Subcommands], None], ...]] = (
    chat.register,
    config.register,
    db.register,
    doctor.register,
    exports.register,
    imports.register,
    macros.register,
    memory.register,
    prompt.register,
    run.register,
    web.register,
)
"""Every command group's ``register``, in name order (the order ``--help`` lists them)."""


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every command group of :data:`COMMANDS` registered."""
    parser = argparse.ArgumentParser(
        prog="tavernbot",
        description="SillyTavern-grade role-play on Discord, Telegram and the terminal.",
    )
    _global_options(parser, config=None, verbose=False)
    parser.set_defaults(handler=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in COMMANDS:
        register(sub)
    _repeat_global_options(parser)
    return parser


def _global_options(parser: argparse.ArgumentParser, *, config: object, verbose: object) -> None:
    """``--config`` and ``-v``: on the top-level parser with their defaults, on every command
    with ``argparse.SUPPRESS`` so that one left out after the command keeps the value given
    (or defaulted) before it."""
    parser.add_argument("--config", type=Path, default=config, help="TOML config file")
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=verbose, help="debug logging"
    )


def _repeat_global_options(parser: argparse.ArgumentParser) -> None:
    """Accept the global options after the command too (``tavernbot run --config FILE``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in set(action.choices.values()):
                _global_options(command, config=argparse.SUPPRESS, verbose=argparse.SUPPRESS)
                _repeat_global_options(command)


OWN_LOGGERS = ("bot", "adapters", "engine")


def setup_logging(*, verbose: bool) -> None:
    """Our own loggers at INFO (DEBUG with -v); libraries only say warnings unless -v.

    Alembic and APScheduler log every migration step and job run at INFO, which would bury
    the console chat in noise.
    """
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.INFO)
    # HTTP libraries log request URLs at INFO/DEBUG: credentials in them are hidden.
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())


def settings_from(args: argparse.Namespace) -> Settings:
    """Load the settings named by ``--config`` (raises ConfigError)."""
    return load_settings(args.config)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tavernbot`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(verbose=args.verbose)
    handler: Handler | None = args.handler
    if handler is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(handler(args) or EXIT_OK)
    except ConfigError as exc:
        print(f"tavernbot: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except EngineConfigurationError as exc:
        print(f"tavernbot: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except UnavailableError as exc:
        print(f"tavernbot: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except EngineError as exc:
        print(f"tavernbot: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
