"""The Telegram front end on aiogram 3 (the only package that imports aiogram).

Start it with :class:`~adapters.telegram.runner.TelegramRunner` given a
:class:`engine.turns.api.RoleplayService` and a :class:`~adapters.telegram.config.TelegramConfig`.
Modules: ``config`` (settings and named limits), ``convert`` (aiogram objects to engine values),
``formatting`` (HTML and splitting), ``sender`` (streamed replies), ``keyboards``, ``state``,
``context`` (session, branch, admin checks), ``turns``, ``imports`` (document detection),
``middlewares``, ``retry``, ``routers/`` and ``runner``.
"""
