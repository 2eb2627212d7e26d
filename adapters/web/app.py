"""The web application and its server.

:func:`build_web_app` puts the pieces together (the gate, the templates, every page of
:mod:`adapters.web.routes`, the static files); :class:`WebServer` serves it on ``[web]
host``/``port`` (HTTPS with ``tls_cert``/``tls_key``) inside the bot's own event loop:
``await server.start()`` binds, ``await server.close()`` stops accepting, lets requests in
flight finish for :data:`SHUTDOWN_GRACE_S`, and releases the port.
"""

from __future__ import annotations

import logging
import ssl
from typing import Final

from aiohttp import web

from adapters.storage.uow import SqlStorage
from adapters.storage.web_repo import SqlSessionDirectory, SqlWebTokens
from adapters.web.auth import GATE_KEY, Gate, Handler, auth_middleware
from adapters.web.context import CONTEXT, WebContext, WebOptions, exposure_warning
from adapters.web.routes import setup_routes
from adapters.web.templating import ENV_KEY, STATIC, build_environment, render
from engine.turns.service import TavernService

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_S: Final = 5.0
"""How long requests in flight get to finish when the server stops."""
MAX_REQUEST_BYTES: Final = 16 * 1024 * 1024
"""Largest request body accepted (an uploaded card or chat fits)."""


@web.middleware
async def error_pages(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A refusal of a page (not ``/api/``) as a page with the same status and its one-line
    reason, so a person sees why; API callers get the plain text."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400 or request.path.startswith(("/api/", "/static/")):
            raise
        reason = exc.text if exc.text and not exc.text.startswith(f"{exc.status}:") else exc.reason
        return render(
            request, "error.html", {"status": exc.status, "message": reason}, status=exc.status
        )


def build_web_app(
    service: TavernService, storage: SqlStorage, options: WebOptions
) -> web.Application:
    """The aiohttp application of the web page over ``service`` and its ``storage``."""
    app = web.Application(
        middlewares=[error_pages, auth_middleware], client_max_size=MAX_REQUEST_BYTES
    )
    app[GATE_KEY] = Gate(SqlWebTokens(storage), configured=options.token)
    app[CONTEXT] = WebContext(
        service=service,
        storage=storage,
        directory=SqlSessionDirectory(storage),
        options=options,
    )
    app[ENV_KEY] = build_environment()
    setup_routes(app)
    app.router.add_static("/static/", STATIC, name="static")
    return app


def _ssl_context(options: WebOptions) -> ssl.SSLContext | None:
    if not options.tls or options.tls_cert is None or options.tls_key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(options.tls_cert, options.tls_key)
    return context


class WebServer:
    """The web page served from this process (start once, close once)."""

    def __init__(self, app: web.Application, options: WebOptions) -> None:
        self._app = app
        self._options = options
        self._runner: web.AppRunner | None = None
        self.port: int | None = None
        """The port bound (the configured one, or the one chosen for port 0)."""

    @property
    def url(self) -> str:
        """Where the page is served."""
        scheme = "https" if self._options.tls else "http"
        return f"{scheme}://{self._options.host}:{self.port or self._options.port}/"

    async def start(self) -> None:
        """Bind and serve (OSError when the port is taken)."""
        warning = exposure_warning(self._options)
        if warning:
            log.warning("%s", warning)
        runner = web.AppRunner(self._app, shutdown_timeout=SHUTDOWN_GRACE_S, access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(
                runner,
                self._options.host,
                self._options.port,
                ssl_context=_ssl_context(self._options),
            )
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = site.port
        log.debug("web page at %s", self.url)  # the caller tells the user

    async def close(self) -> None:
        """Stop serving and release the port."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
