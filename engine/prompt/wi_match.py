"""World info key matching: regex keys, whole words with ASCII boundaries, case, secondary logic.

Behaviour follows SillyTavern 1.15: a key written ``/pattern/flags`` is a JavaScript regex tested
against the raw scan text; any other key is plain text, lower-cased unless case-sensitive, and
with whole-word matching a single-word key must be bounded by non-ASCII-word characters (so
``кот`` matches inside ``котик``, as it does in SillyTavern).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from engine.formats.worldbook import LOGIC_AND_ALL, LOGIC_AND_ANY, LOGIC_NOT_ALL, LOGIC_NOT_ANY
from engine.prompt.jsregex import JsRegex
from engine.prompt.regex_budget import RegexBudget
from engine.prompt.wi_regex import compile_key_regex, key_regex_matches

# SillyTavern's WI regex-key syntax: the whole key is /pattern/flags with these flags only.
_KEY_REGEX = re.compile(r"^/([\s\S]+?)/([gimsuy]*)$")
_UNESCAPED_SLASH = re.compile(r"(^|[^\\])/")
_JS_WHITESPACE = re.compile(
    r"[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
)
_NOT_WORD = "[^A-Za-z0-9_]"

KeyRender = Callable[[str], str]


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchOptions:
    """Per-entry matching switches, already resolved against the book-wide settings."""

    case_sensitive: bool = False
    match_whole_words: bool = False


class Haystack:
    """The scan text, with its lower-cased form computed once."""

    __slots__ = ("_lower", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._lower: str | None = None

    @property
    def lower(self) -> str:
        """The text lower-cased (cached)."""
        if self._lower is None:
            self._lower = self.text.lower()
        return self._lower


@lru_cache(maxsize=4096)
def parse_regex_key(key: str) -> JsRegex | None:
    """The compiled regex of a ``/pattern/flags`` key, or ``None`` when the key is plain text
    (not in that form, an unescaped ``/`` inside, or not a valid JavaScript regex)."""
    found = _KEY_REGEX.match(key)
    if found is None:
        return None
    pattern, flags = found.group(1), found.group(2)
    if _UNESCAPED_SLASH.search(pattern):
        return None
    if len(set(flags)) != len(flags):
        return None
    pattern = pattern.replace("\\/", "/", 1)
    return compile_key_regex(pattern, flags)


@lru_cache(maxsize=4096)
def _whole_word(key: str) -> re.Pattern[str]:
    return re.compile(f"(?:^|{_NOT_WORD})({re.escape(key)})(?:\\Z|{_NOT_WORD})")


def match_key(
    haystack: Haystack, key: str, options: MatchOptions, budget: RegexBudget | None = None
) -> bool:
    """Whether one (already macro-rendered) key matches the scan text. A regex key draws on
    the turn's ``budget`` (when given) and does not match once it is spent."""
    key = key.strip()
    if not key:
        return False
    compiled = parse_regex_key(key)
    if compiled is not None:
        return key_regex_matches(compiled, haystack.text, budget=budget)
    text = haystack.text if options.case_sensitive else haystack.lower
    needle = key if options.case_sensitive else key.lower()
    if options.match_whole_words and not _JS_WHITESPACE.search(needle):
        return _whole_word(needle).search(text) is not None
    return needle in text


def secondary_passes(
    haystack: Haystack,
    keys: tuple[str, ...],
    logic: int,
    options: MatchOptions,
    render: KeyRender,
    budget: RegexBudget | None = None,
    *,
    hits: list[str] | None = None,
) -> bool:
    """SillyTavern's secondary-key logic (AND ANY, NOT ALL, NOT ANY, AND ALL), evaluated in
    key order with the same early exits; the keys that matched are appended to ``hits``."""
    has_any = False
    has_all = True
    for raw in keys:
        hit = match_key(haystack, render(raw), options, budget)
        if hit and hits is not None:
            hits.append(raw)
        has_any = has_any or hit
        has_all = has_all and hit
        if logic == LOGIC_AND_ANY and hit:
            return True
        if logic == LOGIC_NOT_ALL and not hit:
            return True
    if logic == LOGIC_NOT_ANY:
        return not has_any
    if logic == LOGIC_AND_ALL:
        return has_all
    return False


def score_entry(
    haystack: Haystack,
    keys: tuple[str, ...],
    secondary: tuple[str, ...],
    logic: int,
    options: MatchOptions,
    render: KeyRender,
    budget: RegexBudget | None = None,
) -> int:
    """The inclusion-group score: matching primary keys, plus matching secondary keys for
    AND ANY (always) and AND ALL (only when all of them match)."""
    primary = sum(1 for k in keys if match_key(haystack, render(k), options, budget))
    if not keys:
        return 0
    if not secondary:
        return primary
    hits = sum(1 for k in secondary if match_key(haystack, render(k), options, budget))
    if logic == LOGIC_AND_ANY:
        return primary + hits
    if logic == LOGIC_AND_ALL:
        return primary + hits if hits == len(secondary) else primary
    return primary


@dataclass(frozen=True, slots=True, kw_only=True)
class Decorators:
    """The ``@@`` decorators at the start of an entry's content, and the content without them."""

    activate: bool = False
    dont_activate: bool = False
    content: str = ""


def parse_decorators(content: str) -> Decorators:
    """Read leading ``@@activate`` / ``@@dont_activate`` lines (the two SillyTavern honours).

    ``@@@name`` lines are fallbacks, honoured only directly after an unknown decorator.
    """
    if not content.startswith("@@"):
        return Decorators(content=content)
    lines = content.split("\n")
    activate = dont = False
    fallback_allowed = False
    index = 0
    for index, line in enumerate(lines):  # noqa: B007 - index is used after the loop
        if not line.startswith("@@"):
            break
        if line.startswith("@@@"):
            if not fallback_allowed:
                continue
            line = line[1:]
        known = True
        if line.startswith("@@activate"):
            activate = True
        elif line.startswith("@@dont_activate"):
            dont = True
        else:
            known = False
        fallback_allowed = not known
    else:
        index = len(lines)
    return Decorators(activate=activate, dont_activate=dont, content="\n".join(lines[index:]))


LOGICS = (LOGIC_AND_ANY, LOGIC_NOT_ALL, LOGIC_NOT_ANY, LOGIC_AND_ALL)
