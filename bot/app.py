"""The composition root: build the engine on real adapters, run the front ends, shut down.

:class:`Application` owns the long-lived pieces (the database, the model pool, the event bus,
the :class:`~engine.turns.service.TavernService`, long-term memory and its job scheduler) in
one ``AsyncExitStack``: the database is migrated when it opens, interrupted turns are failed
(recovery), and everything is closed in reverse order. :func:`run` starts every configured
platform (Discord, Telegram) or, with none, the console; it is the only place that installs
signal handlers (SIGINT/SIGTERM stop it).
:func:`chat` plays one console session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Final, TextIO

from pydantic import SecretStr

from adapters.console.frontend import ConsoleFrontend
from adapters.console.terminal import TerminalConsole, session_history
from adapters.llm import OFFLINE_ANNOUNCEMENT, ChatModelPool
from adapters.secrets import build_secret_cipher
from adapters.storage import SqlStorage
from adapters.storage.branch_locks import AdvisoryBranchLocks, branch_order_for
from adapters.storage.database import is_sqlite
from adapters.storage.sqlite_guard import hold_sqlite_file
from bot.config import Settings, console_card, database_location, describe_model
from bot.embeddings import build_embedder
from bot.events import EventBus
from bot.notices import InterruptedNotice, InterruptedNotices, run_claims
from bot.scheduler import build_memory_service, session_memory_on, start_memory_jobs
from bot.startup import database_errors, open_database
from engine.memory.service import MemorySettings
from engine.ports import ChatModel
from engine.timeline.service import Claims
from engine.turns.api import AssetKind, SessionKey
from engine.turns.profiles import ENVIRONMENT_KEY_VARIABLE, LLMProfile, environment_profile
from engine.turns.service import TavernService

log = logging.getLogger(__name__)

CONSOLE_REALM = "local"
SHUTDOWN_GRACE_S = 5.0
"""How long running front ends get to finish when the process is asked to stop."""


def _secret(value: SecretStr | None) -> str | None:
    """The configured secret's text; None when it is unset or empty."""
    return (value.get_secret_value() or None) if value is not None else None


def _say_waiting(message: str) -> None:
    """Tell the person who started this process why it does not start yet."""
    print(f"tavernbot: {message}", file=sys.stderr, flush=True)


class Application:
    """The engine and its adapters, opened with ``async with Application(settings) as app``."""

    def __init__(
        self,
        settings: Settings,
        *,
        recover_only: SessionKey | None = None,
        claims: Claims | None = None,
    ) -> None:
        self.settings = settings
        # ``tavernbot chat`` may run next to ``tavernbot run`` on the same database: it
        # recovers only its own session, never the bot's turns in flight.
        self.recover_only = recover_only
        # The sessions whose interrupted turns this process fails (it can tell their chats).
        self.claims = claims
        self.events = EventBus()
        # Chats whose reply this process's recovery failed are told by their front end.
        self.notices = InterruptedNotices()
        self.events.subscribe("floor.failed", self.notices.on_event)
        self.stack = AsyncExitStack()
        self.storage: SqlStorage | None = None
        self.pool = ChatModelPool()
        self.tasks: set[asyncio.Task[Any]] = set()
        self._service: TavernService | None = None

    @property
    def service(self) -> TavernService:
        """The role-play service (after the application opened)."""
        if self._service is None:
            raise RuntimeError("the application is not open")
        return self._service

    @property
    def offline(self) -> bool:
        """Whether replies come from the offline provider."""
        return self.settings.uses_offline_model

    def default_profile(self) -> LLMProfile:
        """The environment profile (``[llm]`` settings), used when no profile is bound."""
        llm = self.settings.llm
        return environment_profile(
            provider="offline" if self.offline else "openai",
            base_url=None if self.offline else llm.base_url,
            model=llm.model,
            timeout_s=llm.timeout_s,
            max_retries=llm.max_retries,
            api_key_ref=ENVIRONMENT_KEY_VARIABLE,
        )

    async def __aenter__(self) -> Application:
        try:
            database = self.settings.database
            if is_sqlite(database.url):
                # SQLite is single-host: a second run/chat on the file waits for the first.
                with database_errors(database.url):  # a bad path: one line, as when opening
                    await self.stack.enter_async_context(
                        hold_sqlite_file(database.url, on_wait=_say_waiting)
                    )
            self.storage = await open_database(database.url, echo=database.echo)
            self.stack.push_async_callback(self.storage.close)
            # Turns of one branch in order, across processes on PostgreSQL.
            locks = branch_order_for(self.storage.engine)
            if isinstance(locks, AdvisoryBranchLocks):
                self.stack.push_async_callback(locks.aclose)
            # Runs after the owned tasks (the heartbeat among them) were cancelled.
            self.stack.push_async_callback(self._release_lease)
            self.stack.push_async_callback(self.pool.aclose)
            self.stack.push_async_callback(self._cancel_tasks)
            environ = dict(os.environ)
            key = _secret(self.settings.llm.api_key)
            if key:
                environ[ENVIRONMENT_KEY_VARIABLE] = key
            cipher = build_secret_cipher(_secret(self.settings.security.secret_key))
            pool = self.pool

            def model_for(profile: LLMProfile) -> ChatModel:
                return pool.for_profile(profile, cipher, environ)

            default = self.default_profile()
            embedder = build_embedder(self.settings)
            if embedder is not None:
                self.stack.push_async_callback(embedder.aclose)
            memory = build_memory_service(
                self.storage,
                model=model_for(default),
                model_name=default.model,
                events=self.events,
                embedder=embedder,
                settings=MemorySettings(
                    story_date_variable=self.settings.memory.story_date_variable
                ),
            )
            self._service = TavernService(
                self.storage,
                model_for=model_for,
                default_profile=default,
                events=self.events,
                cipher=cipher,
                memory=memory,
                # Every session created from now on starts with [session]; others keep theirs.
                session_defaults=self.settings.session.defaults(),
                locks=locks,
                lease_heartbeat_s=database.lease_heartbeat_s,
                lease_expiry_s=database.lease_expiry_s,
            )
            self.spawn(self.notices.run(), name="interrupted-notices")
            failed = await self._service.start(only=self.recover_only, claims=self.claims)
            # The lease keeps this process's turns safe from another process's recovery.
            self.spawn(self._service.keep_lease(), name="lease-heartbeat")
            self.stack.push_async_callback(self._service.aclose)
            scheduler = await start_memory_jobs(
                memory,
                timeline=self._service.timeline,
                memory_on=session_memory_on(self.storage),
            )
            self.stack.push_async_callback(scheduler.shutdown)
            if failed:
                log.warning("%d interrupted turn(s) were marked failed", len(failed))
            # Offline is said by the front end: run() warns, the console prints a "*" line.
        except BaseException:
            await self.stack.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stack.aclose()

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str) -> asyncio.Task[Any]:
        """Start an owned task (cancelled and awaited when the application closes)."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def _release_lease(self) -> None:
        if self._service is None:
            return
        try:
            await self._service.release_lease()
        except Exception:  # the lease expires by itself; closing must go on
            log.exception("could not release this process's lease")

    async def _cancel_tasks(self) -> None:
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def open_console(
    app: Application,
    *,
    session: str,
    user: str,
    jsonl: bool,
    out: TextIO,
    files: dict[AssetKind, list[tuple[str, bytes]]] | None = None,
    options: dict[str, str] | None = None,
    default_card: tuple[str, bytes] | None = None,
) -> ConsoleFrontend:
    """Open (or create) console session ``session`` (a new one takes ``[session]``), import
    the given files into it and set ``options`` (session option name -> value, as ``/set``).
    The first card is the session's character and each further card joins it as a member
    of its group (``chat --character A --character B``). ``default_card`` (``[console]
    character``) is imported when no card is given and the session has no character yet."""
    key = SessionKey(platform="console", realm=CONSOLE_REALM, key=session)
    service = app.service
    info = await service.open_session(key)
    if default_card is not None and info.character is None and not (files or {}).get("card"):
        await service.import_asset(key, "card", *default_card)
    for kind, items in (files or {}).items():
        for index, (filename, data) in enumerate(items):
            if kind != "card" or index == 0:
                await service.import_asset(key, kind, filename, data)
                continue
            card = await service.import_asset(key, kind, filename, data, bind=False)
            info = await service.session_info(key)
            if card.name not in (info.members or (info.character,)):  # reopened: it plays
                await service.add_member(key, card.name)
    for name, value in (options or {}).items():
        await service.set_session_option(key, name, value)
    frontend = ConsoleFrontend(service=service, key=key, user=user, out=out, jsonl=jsonl)

    async def tell(notice: InterruptedNotice) -> None:
        frontend.tell_interrupted(notice.key, notice.branch, notice.floor)

    app.notices.register("console", tell)
    if app.offline:
        frontend._emit("info", message=f"no model endpoint configured: {OFFLINE_ANNOUNCEMENT}")
    greeting = await service.greet(key, user_name=user)
    if greeting is not None:  # a new chat opens with the character's first message
        frontend._show_reply(greeting, streamed=False)
    return frontend


STDIN_CHUNK_BYTES: Final = 64 * 1024
"""Bytes one read of standard input asks for (a line may span several reads)."""


def _byte_lines(fd: int) -> Iterator[bytes]:
    """The lines of file descriptor ``fd`` as bytes, each with its newline (the last may lack
    one), read with ``os.read``: a buffered reader's lock, held by a daemon thread blocked in
    it, would abort the interpreter's shutdown."""
    pending = b""
    while chunk := os.read(fd, STDIN_CHUNK_BYTES):
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", start)) >= 0:
            yield pending[start : end + 1]
            start = end + 1
        pending = pending[start:]
    if pending:
        yield pending


async def stdin_lines(stream: TextIO | None = None) -> AsyncIterator[str | bytes]:
    """Lines of standard input, read on a daemon thread.

    A blocking ``readline`` on an executor thread would keep the process alive after Ctrl-C
    until the user pressed Enter (``asyncio.run`` waits for executor threads); a daemon thread
    does not, and it ends with the input. Lines come as undecoded bytes when the stream has a
    file descriptor: the console decodes each line itself, so one line that is not UTF-8 is
    refused on its own instead of ending the input (or reaching the model half-decoded).
    """
    source = stream or sys.stdin
    lines: Iterator[str | bytes]
    try:
        lines = _byte_lines(source.fileno())
    except (AttributeError, OSError, ValueError):  # an in-memory stream: text lines
        lines = iter(source.readline, "")
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str | bytes | None] = asyncio.Queue()

    def put(item: str | bytes | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed first: nobody is reading
            loop.call_soon_threadsafe(queue.put_nowait, item)

    def pump() -> None:
        try:
            for line in lines:
                put(line)
        finally:
            put(None)

    threading.Thread(target=pump, name="tavernbot-stdin", daemon=True).start()
    while (line := await queue.get()) is not None:
        yield line


def _on_terminal() -> bool:
    """Whether standard input and output are a terminal (not a pipe or a file)."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def console_history_dir(settings: Settings) -> Path | None:
    """Where the console keeps each session's typed lines: beside an SQLite database file;
    None (in memory only) for a server database or an in-memory one."""
    url = settings.database.url
    prefix = "sqlite+aiosqlite:///"
    if not url.startswith(prefix) or ":memory:" in url or not url[len(prefix) :]:
        return None
    return Path(url[len(prefix) :]).expanduser().parent


class SignalOwner:
    """The one place that handles SIGINT and SIGTERM: the first sets :attr:`stop` for a clean
    shutdown; after it the default handlers are back, so a second Ctrl-C interrupts at once."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self._installed: list[signal.Signals] = []

    def __enter__(self) -> SignalOwner:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._first)
                self._installed.append(sig)
        return self

    def _first(self) -> None:
        self.stop.set()
        self._restore()

    def _restore(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in self._installed:
            loop.remove_signal_handler(sig)
        self._installed.clear()

    def __exit__(self, *exc: object) -> None:
        self._restore()


def _reraise(task: asyncio.Task[Any]) -> None:
    """Raise what a finished ``task`` raised (nothing when it is running, cancelled or ok)."""
    if task.done() and not task.cancelled():
        error = task.exception()
        if error is not None:
            raise error


async def _until(stop: asyncio.Event, *tasks: asyncio.Task[Any]) -> None:
    waiter = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({waiter, *tasks}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter


def announce_setup(settings: Settings) -> None:
    """Lines on standard error: where the turns are kept and which model endpoint answers, with
    the setting that chose it (standard output stays the chat's, so ``--jsonl`` is unchanged)."""
    print(f"tavernbot: database {database_location(settings.database.url)}", file=sys.stderr)
    if not settings.uses_offline_model:  # the offline model announces itself, once
        print(f"tavernbot: model {describe_model(settings)}", file=sys.stderr)


async def run(settings: Settings, *, lines: Callable[[], AsyncIterator[str]] | None = None) -> int:
    """``tavernbot run``: every configured platform in one process, the console when none."""
    on_platforms = bool(_secret(settings.discord.token) or _secret(settings.telegram.token))
    # Read before the database opens, so a missing card stops at once with one line.
    default_card = None if on_platforms else console_card(settings)
    announce_setup(settings)
    claims = run_claims(settings)
    async with Application(settings, claims=claims) as app, AsyncExitStack() as fronts:
        from bot.web import serve_web

        started: list[str] = []
        if _secret(settings.discord.token):
            from adapters.discord.runner import DiscordRunner
            from bot.platforms import discord_options

            discord_runner = DiscordRunner(app.service, discord_options(settings.discord))
            await discord_runner.start()
            fronts.push_async_callback(discord_runner.close)
            tell_discord = discord_runner.tell_interrupted
            app.notices.register("discord", lambda n: tell_discord(n.key, n.branch, n.floor))
            fronts.callback(app.notices.unregister, "discord")  # before the client closes
            started.append("discord")
        if _secret(settings.telegram.token):
            from adapters.telegram.runner import TelegramRunner
            from bot.platforms import telegram_config, telegram_coordination

            telegram_runner = TelegramRunner(
                app.service,
                telegram_config(settings.telegram),
                coordination=telegram_coordination(app.storage),
                owner=app.service.leases.owner,
            )
            await telegram_runner.start()
            fronts.push_async_callback(telegram_runner.stop)
            tell_telegram = telegram_runner.tell_interrupted
            app.notices.register("telegram", lambda n: tell_telegram(n.key, n.branch, n.floor))
            fronts.callback(app.notices.unregister, "telegram")  # before the bot closes
            started.append("telegram")
        # The web page once the platforms are up (a platform that cannot start stays the one
        # line a failed start prints), and before a console takes over the terminal.
        await serve_web(app, fronts)
        if not started and lines is None and _on_terminal():
            # A person at a terminal: the line editor, which owns Ctrl-C (it stops a turn).
            frontend = await open_console(
                app,
                session=settings.console.session,
                user=settings.console.user,
                jsonl=False,
                out=sys.stdout,
                default_card=default_card,
            )
            history = session_history(console_history_dir(settings), settings.console.session)
            await TerminalConsole(frontend, history).run()
            return 0
        with SignalOwner() as signals:
            if started:
                if app.offline:
                    log.warning("no model endpoint configured: %s", OFFLINE_ANNOUNCEMENT)
                log.info("serving %s; stop with Ctrl-C", ", ".join(started))
                await signals.stop.wait()
                return 0
            console = settings.console
            frontend = await open_console(
                app,
                session=console.session,
                user=console.user,
                jsonl=False,
                out=sys.stdout,
                default_card=default_card,
            )
            task = app.spawn(frontend.run((lines or stdin_lines)()), name="console")
            await _until(signals.stop, task)
            _reraise(task)
        return 0


async def chat(
    settings: Settings,
    *,
    session: str,
    user: str,
    jsonl: bool,
    files: dict[AssetKind, list[tuple[str, bytes]]],
    options: dict[str, str] | None = None,
    lines: Callable[[], AsyncIterator[str]] | None = None,
    out: TextIO | None = None,
) -> int:
    """``tavernbot chat``: play one console session until the input ends or ``/quit``."""
    key = SessionKey(platform="console", realm=CONSOLE_REALM, key=session)
    # Read before the database opens, so a missing card stops at once with one line.
    default_card = None if files.get("card") else console_card(settings)
    announce_setup(settings)
    async with Application(settings, recover_only=key) as app:
        frontend = await open_console(
            app,
            session=session,
            user=user,
            jsonl=jsonl,
            out=out or sys.stdout,
            files=files,
            options=options,
            default_card=default_card,
        )
        if lines is None and not jsonl and out is None and _on_terminal():
            # A person at a terminal: the line editor, which owns Ctrl-C (it stops a turn).
            history = session_history(console_history_dir(settings), session)
            await TerminalConsole(frontend, history).run()
            return 0
        with SignalOwner() as signals:
            task = app.spawn(frontend.run((lines or stdin_lines)()), name="console")
            await _until(signals.stop, task)
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            else:
                _reraise(task)
    return 0
