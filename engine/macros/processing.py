"""SillyTavern's pre- and post-processors, and the trim/dedent of scoped content.

Pre-processing (legacy ``{{time_UTC+2}}`` and ``<USER>``-style markers) runs once on the whole
text before parsing; post-processing (unescape ``\\{ \\}``, legacy ``{{trim}}``, else markers)
runs on the final text and on each ``{{if}}`` branch, in that order.
"""

from __future__ import annotations

import re

from engine.macros.jsvalues import JS_WHITESPACE

#: What ``{{else}}`` evaluates to outside a splitting ``{{if}}``; deleted by post-processing.
ELSE_MARKER = "\u0000\u001fELSE\u001f\u0000"

_LEGACY_TIME = re.compile(r"\{\{time_(UTC[+-]\d+)\}\}", re.IGNORECASE)
_LEGACY_MARKER = re.compile(r"<(USER|BOT|CHAR|GROUP|CHARIFNOTGROUP)>", re.IGNORECASE)
_MARKER_MACRO = {
    "user": "{{user}}",
    "bot": "{{char}}",
    "char": "{{char}}",
    "group": "{{group}}",
    "charifnotgroup": "{{charIfNotGroup}}",
}
_UNESCAPE = re.compile(r"\\([{}])")
_TRIM_MARKER = re.compile(r"\{\{trim\}\}", re.IGNORECASE)
_INDENT = re.compile(r"[ \t]*")
_NON_BLANK = re.compile(rf"[^{re.escape(JS_WHITESPACE)}]")
#: JavaScript whitespace other than the line break (a line's leading whitespace).
_LINE_SPACE = re.escape(JS_WHITESPACE.replace("\n", ""))
#: Dedent patterns by indentation width (a few are kept).
_DEDENT: dict[int, re.Pattern[str]] = {}


def _legacy_time(match: re.Match[str]) -> str:
    return "{{time::" + match.group(1) + "}}"


def _marker(match: re.Match[str]) -> str:
    return _MARKER_MACRO[match.group(1).lower()]


def preprocess(text: str) -> str:
    """Rewrite legacy syntax into macros, everywhere (arguments and comments included)."""
    if "{{" in text:
        text = _LEGACY_TIME.sub(_legacy_time, text)
    if "<" in text:
        text = _LEGACY_MARKER.sub(_marker, text)
    return text


Rewrite = tuple[int, int, int]
"""A rewritten span: where it starts and ends in the pre-processed text, and how much longer
it became there than it was in the text as written."""


def rewrites(original: str) -> tuple[Rewrite, ...]:
    """Where :func:`preprocess` changed ``original``, in order (none for most texts). The two
    rewrites never overlap: a time macro holds no ``<`` and a marker's macro no ``time_``."""
    found: list[tuple[int, int, str]] = []
    if "{{" in original:
        times = _LEGACY_TIME.finditer(original)
        found.extend((m.start(), m.end(), _legacy_time(m)) for m in times)
    if "<" in original:
        markers = _LEGACY_MARKER.finditer(original)
        found.extend((m.start(), m.end(), _marker(m)) for m in markers)
    spans: list[Rewrite] = []
    shift = 0
    for start, end, replacement in sorted(found):
        grown = len(replacement) - (end - start)
        spans.append((start + shift, start + shift + len(replacement), grown))
        shift += grown
    return tuple(spans)


def original_position(spans: tuple[Rewrite, ...], position: int) -> int:
    """``position`` in the pre-processed text, as a position in the text as written (a
    position inside a rewritten span is the span's start), so a warning points where the
    author wrote the macro."""
    shift = 0
    for start, end, grown in spans:
        if position < start:
            break
        if position < end:
            return start - shift
        shift += grown
    return position - shift


def has_legacy_marker(text: str) -> bool:
    """True when ``text`` holds a ``<USER>``-style marker that pre-processing rewrites."""
    return _LEGACY_MARKER.search(text) is not None


def postprocess(text: str) -> str:
    """Unescape braces, apply legacy ``{{trim}}``, then delete else markers."""
    if "\\" in text:
        text = _UNESCAPE.sub(r"\1", text)
    if "{{" in text:
        text = _legacy_trim(text)
    if "\u0000" in text:
        text = text.replace(ELSE_MARKER, "")
    return text


def _legacy_trim(text: str) -> str:
    """Delete each ``{{trim}}`` with the ``\\r?\\n`` runs around it (as the regex
    ``(?:\\r?\\n)*{{trim}}(?:\\r?\\n)*`` would, found by its literal core for speed)."""
    pieces: list[str] = []
    last = 0
    for match in _TRIM_MARKER.finditer(text):
        start, end = match.start(), match.end()
        if start < last:
            continue
        k = start
        while k > last and text[k - 1] == "\n":
            k -= 1
            if k > last and text[k - 1] == "\r":
                k -= 1
        while True:
            if text.startswith("\n", end):
                end += 1
            elif text.startswith("\r\n", end):
                end += 2
            else:
                break
        pieces.append(text[last:k])
        last = end
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def trim_scoped(content: str) -> str:
    """Trim scoped content and remove the indentation of its first non-blank line (its
    spaces and tabs) from every line; a line indented less loses all its leading whitespace.
    Done by regular expressions: a nested block's content is trimmed at every level, so this
    must cost little per line."""
    first = _NON_BLANK.search(content)
    if first is None:
        return ""
    line_start = content.rfind("\n", 0, first.start()) + 1
    indent = _INDENT.match(content, line_start)
    base = indent.end() - line_start if indent else 0
    if base == 0:
        return content.strip(JS_WHITESPACE)
    dedent = _DEDENT.get(base)
    if dedent is None:
        # After each line break: ``base`` spaces or tabs, else all leading whitespace (a
        # pattern starting with a literal lets the regex engine skip to the line breaks).
        dedent = re.compile(rf"\n(?:[ \t]{{{base}}}|[{_LINE_SPACE}]+)")
        if len(_DEDENT) < 64:
            _DEDENT[base] = dedent
    return dedent.sub("\n", "\n" + content)[1:].strip(JS_WHITESPACE)
