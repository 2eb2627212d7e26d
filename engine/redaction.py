"""Hiding credentials that ride in URLs, before a URL or a message holding one is shown.

A model endpoint or a database URL may carry a password in its userinfo
(``https://user:password@host/v1``) or a key in its query string (``?key=...``,
``?api_key=...``, ``&sig=...``). Every place that shows such a URL to a person (an error
message, a stored floor error, an export, a log line, ``tavernbot doctor``) passes it, or the
whole text around it, through :func:`redact_url` or :func:`redact_text` first. The rest of the
URL (scheme, host, port, path) stays, so the message still says where the failure was.

The functions are plain text rewrites with bounded regular expressions: they never raise on a
malformed URL, and a text without ``://`` is returned as it is.
"""

from __future__ import annotations

import logging
import re
from typing import Final

REDACTED: Final = "***"
"""What a hidden credential is replaced with."""

SECRET_PARAM_WORDS: Final = (
    "key",
    "token",
    "secret",
    "pass",
    "pwd",
    "sig",
    "auth",
    "credential",
    "session",
)
"""A query or fragment parameter whose name contains one of these (any case) is hidden
(``key``, ``api_key``, ``access_token``, ``password``, ``sig``, ``X-Amz-Signature``...)."""

# A URL ends before white space or quotes, and never on sentence punctuation.
_URL: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,30}://[^\s'\"<>`]*[^\s'\"<>`.,;:!?)\]}]")
# The authority is everything up to the first "/", "?" or "#"; userinfo ends at its last "@".
_USERINFO: Final = re.compile(r"^([^:]*://)([^/?#]*@)")
_PARAM: Final = re.compile(r"([?&#;])([^=&#;?]*)=([^&#;]*)")


def _is_secret_name(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in SECRET_PARAM_WORDS)


def redact_url(url: str) -> str:
    """``url`` with its userinfo and its secret-looking parameters replaced by ``***``.

    ``https://bob:pw@host/v1?key=abc&model=x`` becomes ``https://***@host/v1?key=***&model=x``.
    """
    shown = _USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", url, count=1)
    if "=" not in shown:
        return shown

    def param(match: re.Match[str]) -> str:
        sep, name, value = match.groups()
        return f"{sep}{name}={REDACTED}" if value and _is_secret_name(name) else match.group(0)

    head, mark, tail = shown.partition("?")
    if not mark:
        head, mark, tail = shown.partition("#")
    return head + _PARAM.sub(param, mark + tail) if mark else shown


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: redact_url(m.group(0)), text)


class RedactingFilter(logging.Filter):
    """A log handler filter that hides URL credentials in every record it passes, message and
    traceback alike (HTTP libraries log the full request URL at INFO and DEBUG)."""

    _formatter: Final = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite ``record`` in place; never drops it."""
        message = record.getMessage()
        shown = redact_text(message)
        if shown != message:
            record.msg, record.args = shown, None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True
