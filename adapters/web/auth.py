"""Access to the web page: tokens, the login cookie, the CSRF check and the realm check.

A token is ``secrets.token_urlsafe(TOKEN_BYTES)``; only its SHA-256 digest is stored (a random
token needs no password stretching), so a lost token cannot be shown again, only replaced
(``tavernbot web token`` issues a new one). Each token is ``read`` (every page) or ``admin``
(writes too) and sees one realm (``platform:key``) or, with no realm, every realm. A token set
in ``[web] token`` is an admin token of every realm, compared in constant time.

Every request but the login page and the static files needs a token: the ``tavernbot_token``
cookie (HttpOnly, SameSite=Strict) or ``Authorization: Bearer``. A write (any method but GET
and HEAD) made with the cookie must also carry the CSRF token, double-submitted: the form
field ``csrf`` (or header ``X-CSRF-Token``) equal to the ``tavernbot_csrf`` cookie; a Bearer
call needs none, since a browser never adds that header by itself.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, Protocol, get_args

from aiohttp import web

TokenKind = Literal["read", "admin"]
TOKEN_KINDS: Final[tuple[TokenKind, ...]] = get_args(TokenKind)
TOKEN_BYTES: Final = 32
"""Random bytes in a generated token (43 URL-safe characters)."""
MAX_TOKEN_CHARS: Final = 512
"""Longest token text accepted from a request (anything longer is refused unread)."""
TOKEN_COOKIE: Final = "tavernbot_token"
CSRF_COOKIE: Final = "tavernbot_csrf"
CSRF_FIELD: Final = "csrf"
CSRF_HEADER: Final = "X-CSRF-Token"
COOKIE_MAX_AGE_S: Final = 30 * 24 * 3600
"""How long the login cookie lives in the browser (the token itself does not expire)."""
FIRST_TOKEN_LABEL: Final = "first start"
CLI_TOKEN_LABEL: Final = "web token"
PUBLIC_PREFIXES: Final = ("/login", "/static/")
"""Paths served without a token."""

CSRF_KEY: Final = web.RequestKey("tavernbot_csrf", str)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Access:
    """What the token of a request may do: ``kind`` and the realm it sees (None: all)."""

    kind: TokenKind
    realm: str | None
    label: str

    @property
    def admin(self) -> bool:
        """Whether writes are allowed."""
        return self.kind == "admin"

    def sees(self, realm: str) -> bool:
        """Whether sessions of realm ``platform:key`` are shown to this token."""
        return self.realm is None or self.realm == realm


ACCESS_KEY: Final = web.RequestKey("tavernbot_access", Access)


class StoredTokenLike(Protocol):
    """What the token store hands back for a digest."""

    @property
    def kind(self) -> str: ...
    @property
    def realm(self) -> str | None: ...
    @property
    def label(self) -> str: ...


class TokenStore(Protocol):
    """Where token digests are kept (:class:`adapters.storage.web_repo.SqlWebTokens`)."""

    async def add(
        self, digest: str, *, kind: str, realm: str | None, label: str
    ) -> StoredTokenLike: ...
    async def find(self, digest: str) -> StoredTokenLike | None: ...
    async def count(self) -> int: ...
    async def revoke(self, label: str) -> int: ...


def digest_of(token: str) -> str:
    """The stored form of a token: its SHA-256 in hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_kind(kind: str) -> TokenKind:
    """``kind`` as a token kind; ValueError for anything else."""
    for known in TOKEN_KINDS:
        if kind == known:
            return known
    raise ValueError(f"unknown token kind {kind!r} (one of {', '.join(TOKEN_KINDS)})")


async def issue_token(store: TokenStore, *, kind: TokenKind, realm: str | None, label: str) -> str:
    """Generate a token, store its digest, and return the token (shown once, never again)."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    await store.add(digest_of(token), kind=kind, realm=realm, label=label)
    return token


async def first_token(store: TokenStore) -> str | None:
    """On the first start (no token stored yet): an admin token of every realm, to print once;
    None when tokens exist already."""
    if await store.count():
        return None
    return await issue_token(store, kind="admin", realm=None, label=FIRST_TOKEN_LABEL)


class Gate:
    """Decides what a presented token may do."""

    def __init__(self, store: TokenStore, *, configured: str | None = None) -> None:
        self._store = store
        self._configured = configured or None

    async def access(self, token: str | None) -> Access | None:
        """The access ``token`` grants, or None when it is unknown."""
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        if self._configured is not None and hmac.compare_digest(
            token.encode("utf-8"), self._configured.encode("utf-8")
        ):
            return Access(kind="admin", realm=None, label="configured")
        found = await self._store.find(digest_of(token))
        if found is None:
            return None
        return Access(kind=check_kind(found.kind), realm=found.realm, label=found.label)


GATE_KEY: Final = web.AppKey("tavernbot_gate", Gate)


def presented_token(request: web.Request) -> tuple[str | None, bool]:
    """The token a request carries and whether it came in the cookie."""
    header = request.headers.get("Authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip() or None, False
    return request.cookies.get(TOKEN_COOKIE), True


def access_of(request: web.Request) -> Access:
    """The access of an authenticated request (set by :func:`auth_middleware`)."""
    found = request.get(ACCESS_KEY)
    if not isinstance(found, Access):
        raise web.HTTPUnauthorized(text="a token is needed")
    return found


def csrf_value(request: web.Request) -> str:
    """The CSRF token forms of this response carry (the cookie's, or a new one that
    :func:`auth_middleware` sets as the cookie)."""
    value = request.get(CSRF_KEY)
    if value is None:
        value = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(TOKEN_BYTES)
        request[CSRF_KEY] = value
    return value


async def _csrf_ok(request: web.Request) -> bool:
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie:
        return False
    sent = request.headers.get(CSRF_HEADER)
    if sent is None and request.content_type in (
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ):
        form = await request.post()
        field = form.get(CSRF_FIELD)
        sent = field if isinstance(field, str) else None
    return sent is not None and hmac.compare_digest(sent.encode(), cookie.encode())


def _wants_html(request: web.Request) -> bool:
    """A page (not ``/api/``) asked for by a browser: sent to the login form instead."""
    return request.method == "GET" and not request.path.startswith("/api/")


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Refuse every request without a valid token (a browser is sent to the login page), and
    every cookie-authenticated write without the CSRF token; set the CSRF cookie."""
    if not request.path.startswith(PUBLIC_PREFIXES):
        token, from_cookie = presented_token(request)
        access = await request.app[GATE_KEY].access(token)
        if access is None:
            if _wants_html(request):
                raise web.HTTPSeeOther(location="/login")
            raise web.HTTPUnauthorized(text="a valid access token is needed")
        request[ACCESS_KEY] = access
        if request.method not in ("GET", "HEAD") and from_cookie and not await _csrf_ok(request):
            raise web.HTTPForbidden(text="the form's CSRF token is missing or wrong; reload it")
    response = await handler(request)
    _set_csrf_cookie(request, response)
    return response


def _set_csrf_cookie(request: web.Request, response: web.StreamResponse) -> None:
    value = request.get(CSRF_KEY)
    if value is not None and request.cookies.get(CSRF_COOKIE) != value and not response.prepared:
        response.set_cookie(
            CSRF_COOKIE,
            value,
            httponly=True,
            samesite="Strict",
            path="/",
            secure=request.secure or None,
        )


def set_login_cookie(request: web.Request, response: web.StreamResponse, token: str) -> None:
    """Keep ``token`` in the browser: HttpOnly, SameSite=Strict, Secure over HTTPS."""
    response.set_cookie(
        TOKEN_COOKIE,
        token,
        httponly=True,
        samesite="Strict",
        path="/",
        max_age=COOKIE_MAX_AGE_S,
        secure=request.secure or None,
    )


def require_admin(handler: Handler) -> Handler:
    """Decorate a write handler: a read-only token is refused (403) before it runs."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        if not access_of(request).admin:
            raise web.HTTPForbidden(text="this token is read-only; writes need an admin token")
        return await handler(request)

    guarded.__name__ = getattr(handler, "__name__", "guarded")
    guarded.__doc__ = handler.__doc__
    return guarded


def check_realm(request: web.Request, realm: str) -> None:
    """Refuse (404, as if it did not exist) a session of a realm the token does not see."""
    if not access_of(request).sees(realm):
        raise web.HTTPNotFound(text="no such session")


def form_text(form: Mapping[str, object], name: str) -> str:
    """A text field of a posted form ('' when missing or a file)."""
    value = form.get(name)
    return value if isinstance(value, str) else ""
