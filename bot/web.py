"""The web page in the bot's process: ``[web]`` turned into the adapter's options, and
:func:`serve_web`, which ``tavernbot run`` and ``tavernbot web`` call to start it (the first
start's access token printed once, the server closed with the application's other pieces).

A port that cannot be bound is logged and the bot runs on without its web page: several
``run`` processes on one machine (shards, pollers) must not fail because the first one holds
the port; set ``[web] enabled = false`` or another ``port`` on the others.
"""

from __future__ import annotations

import logging
import sys
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, TextIO

from bot.config import Settings, WebSettings

if TYPE_CHECKING:
    from adapters.web.app import WebServer
    from adapters.web.context import WebOptions
    from bot.app import Application

log = logging.getLogger(__name__)


def web_options(settings: WebSettings) -> WebOptions:
    """The adapter's options for ``[web]``."""
    from adapters.web.context import WebOptions

    token = settings.token.get_secret_value() if settings.token is not None else None
    return WebOptions(
        host=settings.host,
        port=settings.port,
        token=token or None,
        tls_cert=settings.tls_cert,
        tls_key=settings.tls_key,
        behind_proxy=settings.behind_proxy,
    )


def web_warning(settings: Settings) -> str | None:
    """What ``config check`` says about ``[web]`` reachable in clear text (None: nothing)."""
    if not settings.web.enabled:
        return None
    from adapters.web.context import exposure_warning

    return exposure_warning(web_options(settings.web))


async def serve_web(
    app: Application, stack: AsyncExitStack, *, out: TextIO | None = None
) -> WebServer | None:
    """Start the web page over ``app``'s engine (None when ``[web] enabled`` is false or the
    port cannot be bound); ``stack`` closes it. Prints where it is and, on the very first
    start, the admin token (shown this once; only its digest is stored)."""
    settings = app.settings.web
    if not settings.enabled or app.storage is None:
        return None
    from adapters.storage.web_repo import SqlWebTokens
    from adapters.web.app import WebServer, build_web_app
    from adapters.web.auth import first_token

    say = out or sys.stderr
    options = web_options(settings)
    server = WebServer(build_web_app(app.service, app.storage, options), options)
    try:
        await server.start()
    except OSError as exc:
        log.warning(
            "the web page is off: cannot listen on %s:%s (%s)",
            options.host,
            options.port,
            exc.strerror or exc,
        )
        return None
    stack.push_async_callback(server.close)
    print(f"tavernbot: web page at {server.url}", file=say, flush=True)
    token = await first_token(SqlWebTokens(app.storage))
    if token is not None:
        print(
            f"tavernbot: web access token (admin, every realm; shown this once, "
            f"'tavernbot web token' issues another): {token}",
            file=say,
            flush=True,
        )
    return server
