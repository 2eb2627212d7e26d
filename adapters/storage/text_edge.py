"""Text the databases refuse, made storable at the storage edge: NUL and lone surrogates.

PostgreSQL refuses the NUL character (``\\x00``) in ``text`` columns and ``\\u0000`` in JSON
it has to read; a lone surrogate (``\\ud800``, which a JSON escape or a broken decoder can
produce) cannot be encoded in UTF-8 at all, so SQLite's driver and asyncpg both refuse it.
Every such character is replaced with U+FFFD (the replacement character) in every string bound
to a statement and in every JSON value written, on both backends alike.

Why the storage edge and not the engine's input edge: text reaches storage from many doors
(typed messages, model replies, variables written by macros and tools, imported cards and
world books, settings, memory records), and what a database accepts is a fact about the
database. Here one rule covers every door, and SQLite and PostgreSQL store the same text, so a
message that works on one works on the other. The prompt of the turn that brought the text in
still sees it as typed; from the next turn on, history holds the replaced text.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

REPLACEMENT: Final = "\ufffd"
"""What a refused character becomes."""

_REFUSED: Final = re.compile("[\x00\ud800-\udfff]")
_PLAIN: Final = frozenset({str, int, float, bool, type(None), bytes})
"""Parameter types that hold no other values (a str is checked, the rest pass as they are)."""


def storable_text(text: str) -> str:
    """``text`` with NUL and lone surrogates replaced by U+FFFD (the same object if clean)."""
    if _REFUSED.search(text) is None:
        return text
    # A well-formed pair never appears in a Python str (it is one code point), so every
    # surrogate left here is lone.
    return _REFUSED.sub(REPLACEMENT, text)


def storable_value(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings...) with every string, keys included, made
    storable; containers are copied only when something changed."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        items = [(storable_value(k), storable_value(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        cleaned = [storable_value(v) for v in value]
        if all(a is b for a, b in zip(cleaned, value, strict=True)):
            return value
        return type(value)(cleaned) if isinstance(value, tuple) else cleaned
    return value


_ESCAPED_REFUSED: Final = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
"""How :func:`json.dumps` (ASCII output) writes a NUL or a surrogate: ``\\u0000``,
``\\ud800``... A match may also be an escaped backslash followed by such text, which only
costs the slow path."""


def storable_json(value: Any) -> str:
    """The JSON text stored for ``value`` (the engines' ``json_serializer``)."""
    text = json.dumps(value)
    # ASCII JSON escapes every NUL and surrogate, so clean text is found by one search of
    # the output instead of a walk over every string of ``value``.
    if _ESCAPED_REFUSED.search(text) is None:
        return text
    return json.dumps(storable_value(value))


def storable_parameters(parameters: Any) -> Any:
    """A statement's bound parameters (a tuple, a dict, or a list of them for executemany)
    with every string made storable."""
    if isinstance(parameters, str):
        return storable_text(parameters)
    if isinstance(parameters, dict):
        return {k: storable_parameters(v) for k, v in parameters.items()}
    # One statement's positional values (the common case): a scan, and a copy only when a
    # string needs cleaning.
    if (
        isinstance(parameters, tuple)
        and all(type(p) in _PLAIN for p in parameters)
        and not any(type(p) is str and _REFUSED.search(p) for p in parameters)
    ):
        return parameters
    if isinstance(parameters, list | tuple):
        cleaned = [storable_parameters(p) for p in parameters]
        return tuple(cleaned) if isinstance(parameters, tuple) else cleaned
    return parameters
