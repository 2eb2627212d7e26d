"""What the web page reads and keeps beside the timeline: its access tokens (digests only) and
the directory of sessions (every session with its realm and last activity), which no engine
port lists. Each call opens its own read or write unit of work on the :class:`SqlStorage`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import delete, func, insert, select, update

from adapters.storage import convert
from adapters.storage.tables import BRANCH, FLOOR, REALM, SESSION
from adapters.storage.uow import SqlStorage
from adapters.storage.web_models import WEB_TOKEN
from engine.errors import ConflictError

MAX_SESSIONS_LISTED: Final = 500
"""Sessions one directory listing returns at most (newest activity first)."""
LAST_USED_EVERY_S: Final = 60
"""A token's last use is written at most this often (one small UPDATE a minute per token in
use, not one per request)."""
MAX_TOKENS_LISTED: Final = 1000
"""Tokens ``tavernbot web token --list`` shows at most (newest first)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredToken:
    """An access token as stored: never the token itself, only what it may do."""

    id: int
    kind: str
    realm: str | None
    label: str
    created_at: datetime
    last_used_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEntry:
    """One session as the directory lists it."""

    id: int
    platform: str
    key: str
    realm_platform: str
    realm_key: str
    settings: Mapping[str, Any]
    created_at: datetime
    last_activity: datetime | None

    @property
    def realm(self) -> str:
        """``platform:key`` of the session's realm (what a token is bound to)."""
        return f"{self.realm_platform}:{self.realm_key}"


class SqlWebTokens:
    """Access tokens of the web page, by digest."""

    def __init__(self, storage: SqlStorage) -> None:
        self._storage = storage

    async def add(self, digest: str, *, kind: str, realm: str | None, label: str) -> StoredToken:
        """Store a new token's digest."""
        async with self._storage.unit_of_work() as uow:
            result = await uow.connection.execute(
                insert(WEB_TOKEN)
                .values(digest=digest, kind=kind, realm=realm, label=label)
                .returning(*WEB_TOKEN.c)
            )
            return _token(result.one())

    async def find(self, digest: str) -> StoredToken | None:
        """The token with this digest, or None; notes its use (at most every
        :data:`LAST_USED_EVERY_S`)."""
        async with self._storage.read() as uow:
            row = (
                await uow.connection.execute(select(WEB_TOKEN).where(WEB_TOKEN.c.digest == digest))
            ).first()
        if row is None:
            return None
        token = _token(row)
        now = datetime.now(UTC)
        last = token.last_used_at
        if last is None or (now - last).total_seconds() >= LAST_USED_EVERY_S:
            try:
                async with self._storage.unit_of_work() as uow:
                    await uow.connection.execute(
                        update(WEB_TOKEN)
                        .where(WEB_TOKEN.c.id == token.id)
                        .values(last_used_at=now)
                    )
            except ConflictError:
                pass  # a busy database: the mark is a convenience, the request goes on
        return token

    async def listed(self) -> list[StoredToken]:
        """Every stored token (never the token itself), newest first."""
        async with self._storage.read() as uow:
            rows = await uow.connection.execute(
                select(WEB_TOKEN)
                .order_by(WEB_TOKEN.c.created_at.desc(), WEB_TOKEN.c.id.desc())
                .limit(MAX_TOKENS_LISTED)
            )
            return [_token(row) for row in rows]

    async def count(self) -> int:
        """How many tokens are stored."""
        async with self._storage.read() as uow:
            return int(
                (
                    await uow.connection.execute(select(func.count()).select_from(WEB_TOKEN))
                ).scalar_one()
            )

    async def revoke(self, label: str) -> int:
        """Delete every token with this label; how many were deleted."""
        async with self._storage.unit_of_work() as uow:
            result = await uow.connection.execute(
                delete(WEB_TOKEN).where(WEB_TOKEN.c.label == label)
            )
            return int(result.rowcount or 0)


class SqlSessionDirectory:
    """Every session with its realm and the time of its newest floor."""

    def __init__(self, storage: SqlStorage) -> None:
        self._storage = storage

    async def sessions(
        self, *, realm: str | None = None, limit: int = MAX_SESSIONS_LISTED
    ) -> list[SessionEntry]:
        """Sessions (of realm ``platform:key``, or of every realm), newest activity first."""
        stmt = _listing().order_by(
            func.coalesce(_last_activity(), SESSION.c.created_at).desc(), SESSION.c.id.desc()
        )
        if realm is not None:
            platform, _, key = realm.partition(":")
            stmt = stmt.where(REALM.c.platform == platform, REALM.c.key == key)
        async with self._storage.read() as uow:
            rows = await uow.connection.execute(stmt.limit(min(limit, MAX_SESSIONS_LISTED)))
            return [_entry(row) for row in rows]

    async def session(self, session_id: int) -> SessionEntry | None:
        """One session by id, or None."""
        async with self._storage.read() as uow:
            row = (
                await uow.connection.execute(_listing().where(SESSION.c.id == session_id))
            ).first()
            return None if row is None else _entry(row)


def _last_activity() -> Any:
    """The newest floor's time of the outer query's session (a correlated subquery: JSON
    settings cannot be grouped on PostgreSQL)."""
    return (
        select(func.max(FLOOR.c.updated_at))
        .join(BRANCH, BRANCH.c.id == FLOOR.c.branch_id)
        .where(BRANCH.c.session_id == SESSION.c.id)
        .scalar_subquery()
    )


def _listing() -> Any:
    """Sessions joined to their realm, with their newest floor's time."""
    return select(
        SESSION.c.id,
        SESSION.c.platform,
        SESSION.c.key,
        SESSION.c.settings,
        SESSION.c.created_at,
        REALM.c.platform.label("realm_platform"),
        REALM.c.key.label("realm_key"),
        _last_activity().label("last_activity"),
    ).join(REALM, REALM.c.id == SESSION.c.realm_id)


def _token(row: Any) -> StoredToken:
    return StoredToken(
        id=row.id,
        kind=row.kind,
        realm=row.realm,
        label=row.label,
        created_at=convert.aware(row.created_at),
        last_used_at=None if row.last_used_at is None else convert.aware(row.last_used_at),
    )


def _entry(row: Any) -> SessionEntry:
    return SessionEntry(
        id=row.id,
        platform=row.platform,
        key=row.key,
        realm_platform=row.realm_platform,
        realm_key=row.realm_key,
        settings=dict(row.settings or {}),
        created_at=convert.aware(row.created_at),
        last_activity=None if row.last_activity is None else convert.aware(row.last_activity),
    )
