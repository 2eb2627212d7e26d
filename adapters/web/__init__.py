"""The web page for the people who run the game: sessions, timelines, variables (and, from
further modules, memory, the prompt inspector, assets and live updates).

Served by aiohttp's web server inside the bot's own process and event loop (``tavernbot run``)
or alone (``tavernbot web``), over the same engine: pages read through the
:class:`~engine.turns.service.TavernService` and the storage ports, never raw SQL in a handler
(the session directory and the token digests are repositories in
:mod:`adapters.storage.web_repo`). Templates are Jinja2 (autoescaped); the little JavaScript in
``static/app.js`` is ours and optional: every page reads without it.

Layout:

- :mod:`.app` — :func:`~.app.build_web_app` and :class:`~.app.WebServer` (start/close).
- :mod:`.context` — :class:`~.context.WebOptions` (``[web]``), :class:`~.context.WebContext`
  (``request.app[CONTEXT]``: service, storage, directory, options), the exposure warning.
- :mod:`.auth` — tokens (hashed, read or admin, bound to a realm), the middleware that asks
  every request for one, the CSRF double-submit check, ``require_admin`` and ``check_realm``.
- :mod:`.templating` — ``render(request, template, context)``, the ``NAV`` and
  ``SESSION_TABS`` lists a page module appends its links to.
- :mod:`.routes` — ``PAGES``: every page module's ``setup(app)``; a new page module adds
  itself there and nowhere else.
- Page modules: :mod:`.pages_login`, :mod:`.pages_sessions` (``/``, ``entry_of`` for a
  session route with its realm check), :mod:`.pages_timeline` (``branch_view``: a branch and
  its floors), :mod:`.pages_variables`; :mod:`.timeline_views` holds their display values.

A page module's handlers take ``request``; ``access_of(request)`` is the token's access,
``entry_of(request)`` the route's session (404 for another realm's), ``render`` the HTML and
``require_admin`` guards a write. Forms carry ``<input type=hidden name="{{ csrf_field }}"
value="{{ csrf }}">`` (``base.html`` gives every template both names).
"""
