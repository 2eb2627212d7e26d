"""Opening what the bot needs at start-up, with failures as one clear line.

A database that cannot be opened (a path under a regular file, a server that refuses the
connection, bad credentials) surfaces deep in SQLAlchemy or a driver with a long traceback.
:func:`open_database` opens and migrates the configured database and turns any such failure
into an :class:`~engine.errors.UnavailableError` naming the database (password hidden), the
setting it came from, the reason, and what to try; the half-opened engine is disposed first so
nothing is left unclosed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final

from engine.errors import UnavailableError
from engine.redaction import redact_text, redact_url

if TYPE_CHECKING:
    from adapters.storage import SqlStorage

DATABASE_SETTING: Final = "[database] url or DATABASE_URL"
"""Where the database URL is configured, as the messages name it."""
SQLITE_HINT: Final = "check that its folder exists, is a folder and is writable"
SERVER_HINT: Final = (
    "check that the server is running and the URL's host, port, user and database name"
)


def shown_url(url: str) -> str:
    """``url`` fit to print: no password, no credentials in the query."""
    from sqlalchemy.engine import make_url

    return redact_url(make_url(url).render_as_string(hide_password=True))


def _reason(exc: BaseException) -> str:
    """The cause of ``exc`` in a few words (a driver error's own first line)."""
    cause: BaseException = getattr(exc, "orig", None) or exc
    if isinstance(cause, ConnectionRefusedError):
        return "the connection was refused (is the server running on that host and port?)"
    if isinstance(cause, FileExistsError | NotADirectoryError) and cause.filename:
        return f"{cause.filename} is a file, not a folder"
    if isinstance(cause, OSError) and cause.strerror:
        where = f" ({cause.filename})" if cause.filename else ""
        return f"{cause.strerror}{where}"
    text = str(cause).strip().splitlines()
    return redact_text(text[0]) if text else type(cause).__name__


def database_failure(url: str, exc: BaseException) -> UnavailableError:
    """The one-line error for database ``url`` that could not be opened because of ``exc``."""
    from adapters.storage.database import is_sqlite

    try:
        hint = SQLITE_HINT if is_sqlite(url) else SERVER_HINT
        shown = shown_url(url)
    except Exception:  # an unparsable URL: say so rather than fail while reporting
        hint, shown = "check the URL", "(unparsable URL)"
    return UnavailableError(
        f"cannot open the database {shown} (set by {DATABASE_SETTING}): {_reason(exc)}; {hint}"
    )


@contextmanager
def database_errors(url: str) -> Iterator[None]:
    """Turn a failure to open or migrate database ``url`` into :func:`database_failure`."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        yield
    except (OSError, SQLAlchemyError) as exc:
        raise database_failure(url, exc) from exc


async def open_database(url: str, *, echo: bool = False) -> SqlStorage:
    """The storage for ``url``, migrated to the newest schema (UnavailableError when the
    database cannot be opened)."""
    from adapters.storage import SqlStorage, create_engine
    from adapters.storage.migrate import upgrade_engine

    with database_errors(url):
        engine = create_engine(url, echo=echo)
        try:
            await upgrade_engine(engine)
        except BaseException:
            await engine.dispose()
            raise
    return SqlStorage(engine)
