"""The Telegram front end's settings and named limits.

:class:`TelegramConfig` is plain data built by the composition root from ``[telegram]`` in the
configuration; tests build it directly. Every throttle and bound the adapter applies is a named
constant here so that it can be read, tuned and tested in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MESSAGE_LIMIT_UTF16 = 4096
"""Telegram's limit for one message's visible text, in UTF-16 code units."""
CAPTION_LIMIT_UTF16 = 1024
"""Telegram's limit for a document caption."""
CALLBACK_DATA_LIMIT = 64
"""Telegram's limit for inline button callback data, in bytes."""
EDIT_INTERVAL_PRIVATE_S = 1.0
"""Minimum time between two edits of a streamed reply in a private chat (about 1 per second)."""
EDIT_INTERVAL_GROUP_S = 3.0
"""Minimum time between two edits in a group (Telegram allows about 20 messages a minute)."""
DRAFT_INTERVAL_S = 0.5
"""Minimum time between two message drafts in a private chat."""
TYPING_REFRESH_S = 4.5
"""Telegram shows "typing" for 5 seconds; it is refreshed just before it fades."""
MAX_RETRY_AFTER_ATTEMPTS = 5
"""How often one request is retried after 429 answers before giving up."""
MAX_RETRY_AFTER_S = 60.0
"""A 429 asking for a longer wait than this is not waited for (the request fails)."""
NETWORK_RETRIES = 4
"""How often a request is retried after network errors or 5xx answers."""
NETWORK_BACKOFF_S = 0.5
"""The first wait after a network error; doubled after each further failure."""
ADMIN_CACHE_S = 60.0
"""How long a group member's admin status is trusted before asking Telegram again."""
MAX_IMPORT_BYTES = 10 * 1024 * 1024
"""The largest document imported (Telegram lets bots download up to 20 MB)."""
SEEN_UPDATES = 10_000
"""How many recent update ids are remembered to drop a redelivered update."""
VARS_SHOWN = 50
"""How many variables one ``/vars`` answer lists."""
VALUE_SHOWN_CHARS = 300
"""A longer variable value is cut in listings."""
LEADER_LEASE_S = 30.0
"""How long the poller role lasts without renewal: a killed leader is replaced after this."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TelegramConfig:
    """What the Telegram runner needs to start.

    ``api_base`` points aiogram at a self-hosted Bot API server or a test server (None: the
    public one). In ``webhook`` mode the runner listens on ``webhook_host:webhook_port`` at
    ``webhook_path`` and registers ``webhook_url`` with Telegram. ``allowed_users`` limits
    private chats to those user ids when not empty.
    """

    token: str
    api_base: str | None = None
    mode: Literal["polling", "webhook"] = "polling"
    webhook_url: str | None = None
    webhook_host: str = "127.0.0.1"
    webhook_port: int = 8443
    webhook_path: str = "/telegram"
    webhook_secret: str | None = None
    allowed_users: frozenset[int] = frozenset()
    polling_timeout_s: int = 10
    polling_backoff_min_s: float = 1.0
    polling_backoff_max_s: float = 5.0
    edit_interval_private_s: float = EDIT_INTERVAL_PRIVATE_S
    edit_interval_group_s: float = EDIT_INTERVAL_GROUP_S
    draft_interval_s: float = DRAFT_INTERVAL_S
    use_drafts: bool = True
    batch_lines: bool = True
    """Lines sent while a turn runs share the next floor (False: one floor per message)."""
    leader_lease_s: float = LEADER_LEASE_S
    """With several polling processes on one database, the poller role's lease."""
