"""The login form (paste a token; it is kept in an HttpOnly cookie) and logging out."""

from __future__ import annotations

from aiohttp import web

from adapters.web.auth import (
    CSRF_COOKIE,
    CSRF_FIELD,
    GATE_KEY,
    TOKEN_COOKIE,
    form_text,
    set_login_cookie,
)
from adapters.web.templating import render


async def login_form(request: web.Request) -> web.Response:
    """The token form."""
    return render(request, "login.html", {"error": None})


async def login(request: web.Request) -> web.StreamResponse:
    """Check the posted token (and the form's CSRF token); on success set the cookie."""
    form = await request.post()
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie or form_text(form, CSRF_FIELD) != cookie:
        return render(request, "login.html", {"error": "the form expired; try again"}, status=403)
    token = form_text(form, "token").strip()
    if await request.app[GATE_KEY].access(token) is None:
        return render(request, "login.html", {"error": "unknown token"}, status=401)
    response = web.HTTPSeeOther(location="/")
    set_login_cookie(request, response, token)
    raise response


async def logout(request: web.Request) -> web.StreamResponse:
    """Forget the cookie (a POST with the CSRF token, so no other site can log one out)."""
    response = web.HTTPSeeOther(location="/login")
    response.del_cookie(TOKEN_COOKIE, path="/")
    raise response


def setup(app: web.Application) -> None:
    """Add ``/login`` and ``/logout``."""
    app.router.add_get("/login", login_form, name="login")
    app.router.add_post("/login", login)
    app.router.add_post("/logout", logout, name="logout")
