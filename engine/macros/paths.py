"""Core Profile structured variable paths: ``a.b``, ``a['k'].c``, ``a["x y"]``.

An exact flat key always wins; only a key that does not exist and contains ``.`` or ``[`` is
read as a path. There are no array indices, wildcards or filters. A path write replaces the
root key's JSON value (a copy with the leaf changed), so only root keys are ever stored.

A path has at most :data:`MAX_PATH_SEGMENTS` segments: a longer one is a parse error (the
macro warns and stays raw), so no stored value is ever nested deeper than that by a path
write, and nothing downstream (copies, JSON encoders, databases) meets thousands of levels.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Final

MAX_PATH_SEGMENTS: Final = 64
"""Most segments (the root key included) a structured variable path may have; real paths
have a handful. A longer path is refused with a ``parse`` error naming this limit."""

_WS = " \t\n\r\f\v"


class PathError(Exception):
    """A path that cannot be used; ``code`` is ``parse`` (bad syntax) or ``type`` (the path
    goes through something that is not an object)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Path:
    """A parsed path: the root key and the segments below it (at least one)."""

    root: str
    segments: tuple[str, ...]


def scan_quoted(text: str, i: int) -> tuple[str, int] | None:
    """The quoted string opening at ``text[i]`` (``'`` or ``"``) and the index after its closing
    quote; a backslash takes the next character as it is. None when the quote never closes.

    Shared with ``{{if}}`` conditions, which quote their literals the same way; each caller
    words its own error for an unclosed quote."""
    quote = text[i]
    out: list[str] = []
    i += 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        if ch == quote:
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    return None


def _skip(key: str, i: int) -> int:
    while i < len(key) and key[i] in _WS:
        i += 1
    return i


def parse_path(key: str) -> Path:
    """Parse a path; raises :class:`PathError` (code ``parse``) on bad syntax."""
    segments: list[str] = []
    i = _skip(key, 0)
    n = len(key)
    if i >= n:
        raise PathError("parse", "empty variable path")
    expect_segment = True
    while i < n:
        ch = key[i]
        if ch == "[":
            i = _skip(key, i + 1)
            if i >= n or key[i] not in "'\"":
                raise PathError("parse", f"only quoted keys may stand in brackets: {key!r}")
            quoted = scan_quoted(key, i)
            if quoted is None:
                raise PathError("parse", f"unclosed quote in variable path {key!r}")
            text, i = quoted
            i = _skip(key, i)
            if i >= n or key[i] != "]":
                raise PathError("parse", f"unclosed bracket in variable path {key!r}")
            _append(segments, text, key)
            i += 1
            expect_segment = False
        elif ch == ".":
            if expect_segment:
                raise PathError("parse", f"empty segment in variable path {key!r}")
            expect_segment = True
            i += 1
        elif ch in _WS:
            i = _skip(key, i)
        elif ch == "]":
            raise PathError("parse", f"unexpected ']' in variable path {key!r}")
        else:
            if not expect_segment:
                raise PathError("parse", f"missing '.' in variable path {key!r}")
            start = i
            while i < n and key[i] not in ".[]" and key[i] not in _WS:
                i += 1
            _append(segments, key[start:i], key)
            expect_segment = False
    if expect_segment:
        raise PathError("parse", f"variable path ends with '.': {key!r}")
    if len(segments) < 2:
        return Path(segments[0], ())
    return Path(segments[0], tuple(segments[1:]))


def _append(segments: list[str], segment: str, key: str) -> None:
    if len(segments) >= MAX_PATH_SEGMENTS:
        raise PathError(
            "parse",
            f"variable path {key[:40]!r}... has more than MAX_PATH_SEGMENTS={MAX_PATH_SEGMENTS}"
            " segments",
        )
    segments.append(segment)


def is_path(store: dict[str, Any], key: str) -> bool:
    """Is ``key`` read as a path (not an existing flat key, and it contains ``.`` or ``[``)?"""
    return ("." in key or "[" in key) and key not in store


_MISSING = object()


def read(store: dict[str, Any], path: Path) -> tuple[bool, Any]:
    """``(exists, value)`` at ``path``; raises ``PathError('type')`` through a non-object."""
    current = store.get(path.root, _MISSING)
    if current is _MISSING:
        return False, None
    for segment in path.segments:
        if not isinstance(current, dict):
            raise PathError("type", f"'{path.root}' does not hold an object at '{segment}'")
        current = current.get(segment, _MISSING)
        if current is _MISSING:
            return False, None
    return True, current


def written(store: dict[str, Any], path: Path, value: Any) -> Any:
    """The root's new value with ``value`` at ``path`` (the store itself is not changed)."""
    root = store.get(path.root, _MISSING)
    if root is _MISSING or root is None:
        root = {}
    if not isinstance(root, dict):
        raise PathError("type", f"'{path.root}' does not hold an object")
    new_root = copy.deepcopy(root)
    current = new_root
    for segment in path.segments[:-1]:
        nxt = current.get(segment, _MISSING)
        if nxt is _MISSING:
            nxt = {}
            current[segment] = nxt
        elif not isinstance(nxt, dict):
            raise PathError("type", f"'{path.root}' does not hold an object at '{segment}'")
        current = nxt
    current[path.segments[-1]] = value
    return new_root


def deleted(store: dict[str, Any], path: Path) -> Any:
    """The root's new value without the leaf, or ``_MISSING`` when there is nothing to delete."""
    exists, _ = read(store, path)
    if not exists:
        return _MISSING
    new_root = copy.deepcopy(store[path.root])
    current = new_root
    for segment in path.segments[:-1]:
        current = current[segment]
    del current[path.segments[-1]]
    return new_root


MISSING = _MISSING
