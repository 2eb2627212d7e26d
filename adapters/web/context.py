"""What every page handler reaches through ``request.app[CONTEXT]``: the engine, its storage,
the session directory and the web settings (one :class:`WebContext` per application)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from aiohttp import web

from adapters.storage.web_repo import SessionEntry, SqlSessionDirectory
from engine.ports import Storage
from engine.turns.api import SessionKey
from engine.turns.service import TavernService

LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True, slots=True, kw_only=True)
class WebOptions:
    """The ``[web]`` settings the server needs (``bot.config.WebSettings`` builds it)."""

    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    behind_proxy: bool = False

    @property
    def tls(self) -> bool:
        """Whether the server speaks HTTPS itself."""
        return bool(self.tls_cert and self.tls_key)


def exposure_warning(options: WebOptions) -> str | None:
    """The warning for a server reachable from other hosts over plain HTTP (tokens would
    travel in clear text), or None."""
    if options.host in LOOPBACK_HOSTS or options.tls or options.behind_proxy:
        return None
    return (
        f"the web page listens on {options.host}:{options.port} over plain HTTP: set [web] "
        "tls_cert and tls_key, or put it behind a TLS reverse proxy (behind_proxy = true)"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class WebContext:
    """The engine and the reads the pages need."""

    service: TavernService
    storage: Storage
    directory: SqlSessionDirectory
    options: WebOptions


CONTEXT: Final = web.AppKey("tavernbot_web", WebContext)


def context_of(request: web.Request) -> WebContext:
    """The application's :class:`WebContext`."""
    return request.app[CONTEXT]


def session_key(entry: SessionEntry) -> SessionKey:
    """The engine's key of a listed session."""
    return SessionKey(platform=entry.platform, realm=entry.realm_key, key=entry.key)
