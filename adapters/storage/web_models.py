"""The table of the web page's access tokens (see :mod:`adapters.web.auth`).

Only a token's SHA-256 digest is stored: a token is 32 random bytes, so a fast hash is enough
(no password stretching), and the database never holds a usable token. ``realm`` is
``platform:key`` of the one realm the token sees, or NULL for every realm (the operator's).

This model joins :class:`adapters.storage.models.Base` (``models`` imports this module at its
end), so Alembic and the "models agree with migrations" test see it.
"""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy import Integer, String, Table
from sqlalchemy.orm import Mapped, mapped_column

from adapters.storage.models import Base, utcnow

DIGEST_LENGTH = 64
"""A SHA-256 digest in hex."""
REALM_LENGTH = 240
"""``platform:key`` of a realm (platform 32 + key 200 characters, and the colon)."""
LABEL_LENGTH = 100
"""Longest token label (``first start``, ``web token``, a name an operator gives)."""


class WebTokenRow(Base):
    """One access token of the web page: its digest, kind (read or admin) and realm."""

    __tablename__ = "web_token"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(DIGEST_LENGTH), unique=True)
    kind: Mapped[str] = mapped_column(String(16))
    realm: Mapped[str | None] = mapped_column(String(REALM_LENGTH))
    label: Mapped[str] = mapped_column(String(LABEL_LENGTH))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # When a request last presented it (to the minute: see SqlWebTokens.find); NULL: never.
    last_used_at: Mapped[datetime | None] = mapped_column()


# The Core handle the token repository uses (kept here, not in ``tables``, so the web page's
# table travels with its model).
WEB_TOKEN = cast(Table, WebTokenRow.__table__)
