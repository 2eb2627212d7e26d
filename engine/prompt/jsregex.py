"""JavaScript regular expressions for a Python engine.

SillyTavern files carry JS regex literals (``/pattern/flags``). This module parses them the way
ST does and translates the JS pattern into an equivalent pattern for the ``regex`` package, which
(unlike ``re``) supports variable-width look-behind, ``\\p{...}`` and a matching ``timeout``.

Translation rules (JS -> Python) that matter for real files:

* ``\\d \\w \\s \\b`` and their negations are ASCII/JS-defined sets, not Python's Unicode ones;
* ``.`` excludes ``\\n \\r \\u2028 \\u2029`` unless the ``s`` flag is set;
* ``^``/``$`` are strict string anchors without ``m`` and know JS line terminators with it;
* a back-reference to a group that did not participate matches the empty string;
* ``(?<name>...)``/``\\k<name>`` become numbered groups (JS names need not be Python names);
* Annex B leniencies without ``u``: ``a{,3}`` and a lone ``{``/``}``/``]`` are literal, unknown
  escapes are the letter itself, ``\\12`` is an octal escape when there are fewer than 12 groups;
* syntax JS rejects and Python would accept (``(?i)``, ``(?>...)``, ``a*+``...) is rejected.

Known gaps (documented, not emulated): without ``u`` JS works on UTF-16 code units (``.`` can
match half of an astral character, and an empty match can fall between its halves); ``\\P{...}``
with ``i`` and ``u``; a character range that spans ``ſ``/``K`` under ``i`` without ``u``.
Checked against Node on thousands of random patterns and inputs.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import regex  # type: ignore[import-untyped]  # no stubs are installed

from engine.prompt.js_translate import JsRegexError as JsRegexError
from engine.prompt.js_translate import translate

# ST caches 1000 compiled regexes; so do we (per pattern+flags).
REGEX_CACHE_SIZE = 1000
_SCRIPT_FLAGS = frozenset("gmixXsuUAJ")  # what ST's regexFromString lets through
_JS_FLAGS = frozenset("dgimsuvy")  # what JS knows
_SUPPORTED_FLAGS = frozenset("gimsuy")  # what this port implements
# A longer pattern is refused: no real script needs it and translation is linear but not free.
MAX_PATTERN_CHARS = 20_000


@dataclass(frozen=True, slots=True, kw_only=True)
class JsRegex:
    """A translated JS regex: the compiled Python pattern and what JS semantics need."""

    source: str
    flags: str
    pattern: regex.Pattern[str]
    group_count: int
    group_names: Mapping[str, int]  # JS group name -> group number

    @property
    def global_(self) -> bool:
        """The ``g`` flag: replace every match rather than the first."""
        return "g" in self.flags

    @property
    def sticky(self) -> bool:
        """The ``y`` flag: a match must start exactly at the search position."""
        return "y" in self.flags


def parse_script_regex(find_regex: str) -> JsRegex | None:
    """Compile a script's ``findRegex`` exactly as ST's ``regexFromString`` does.

    Returns None when ST would end up with no regex (the script is then inert). The literal
    parse is ``/(\\/?)(.+)\\1([a-z]*)/i`` on the first non-empty line; flags outside
    ``gmixXsuUAJ`` (or repeated) make ST compile the *whole input* as a flag-less pattern.
    """
    found = _LITERAL.search(find_regex)
    if found is None:
        return None
    body, flags = found.group(2), found.group(3)
    try:
        if flags and not (set(flags) <= _SCRIPT_FLAGS and len(set(flags)) == len(flags)):
            return compile_js(find_regex, "")
        return compile_js(body, flags)
    except JsRegexError:
        return None


# ST's regexFromString literal splitter; `.` stands for JS's "not a line terminator".
_LITERAL = regex.compile(r"(/?)([^\n\r\u2028\u2029]+)\1([A-Za-z]*)")


def compile_js(source: str, flags: str = "") -> JsRegex:
    """Translate and compile a JS pattern with JS flags; raises JsRegexError if JS would throw."""
    return _compile_cached(source, flags)


@functools.lru_cache(maxsize=REGEX_CACHE_SIZE)
def _compile_cached(source: str, flags: str) -> JsRegex:
    if len(source) > MAX_PATTERN_CHARS:
        raise JsRegexError(
            f"pattern is {len(source)} characters, over MAX_PATTERN_CHARS={MAX_PATTERN_CHARS}",
            field="regex",
        )
    unknown = set(flags) - _JS_FLAGS
    if unknown or len(set(flags)) != len(flags):
        raise JsRegexError(f"invalid regular expression flags {flags!r}", field="regex")
    if set(flags) - _SUPPORTED_FLAGS:
        raise JsRegexError(f"unsupported regular expression flags {flags!r}", field="regex")
    python_pattern, group_count, names = translate(source, flags)
    options = regex.V0 | (regex.IGNORECASE if "i" in flags else 0)
    try:
        compiled = regex.compile(python_pattern, options)
    except (regex.error, ValueError, OverflowError, RecursionError) as exc:
        raise JsRegexError(
            f"invalid regular expression /{source}/: {exc}", field="regex"
        ) from None
    return JsRegex(
        source=source,
        flags=flags,
        pattern=compiled,
        group_count=group_count,
        group_names=names,
    )


def js_replace(
    compiled: JsRegex, text: str, replacement: Callable[[Any], str], *, timeout_s: float
) -> str:
    """``text.replace(regex, fn)`` with JS's stepping; raises TimeoutError past ``timeout_s``.

    Python's ``sub`` differs after an empty match: it retries at the same position for a
    non-empty match, while JS moves one position on (``/[ab]*?/g`` on "xb" never matches "b").
    Without ``g`` only the first match is replaced. ``replacement`` receives a ``regex`` match.
    """
    deadline = time.monotonic() + timeout_s
    pieces: list[str] = []
    pos = 0
    copied = 0
    while pos <= len(text):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("regex replacement took too long")
        # concurrent=True: the GIL is released while matching, so a backtracking pattern in a
        # worker thread does not starve the event loop's thread.
        found = compiled.pattern.search(text, pos, timeout=remaining, concurrent=True)
        if found is None:
            break
        start, end = found.span()
        pieces.append(text[copied:start])
        pieces.append(replacement(found))
        copied = end
        if not compiled.global_:
            break
        pos = end + 1 if end == start else end
    pieces.append(text[copied:])
    return "".join(pieces)
