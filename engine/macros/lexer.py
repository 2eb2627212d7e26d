"""The macro lexer: one compiled regex finds every structural token in a single pass, and a few
anchored patterns read a macro's head (flags, name, shorthand) where a ``{{`` opens.

The patterns follow SillyTavern 1.18's lexer: ASCII names (a letter, then letters, digits,
``_`` or ``-``); flags ``! ? ~ # / >`` before the name; ``//`` outranks the ``/`` flag;
characters after a name that are not whitespace, ``:``, ``|`` or ``}`` are dropped; shorthand
variable names may contain ``-`` but not end with it. On top of that the Core Profile lets a
shorthand name be a structured path (``.a.b``, ``$a['k']``) in any script.
"""

from __future__ import annotations

import re

from engine.macros.jsvalues import JS_WHITESPACE

#: A character class body matching JavaScript's ``\\s`` (Python's ``\\s`` also matches
#: ``\\x1c``-``\\x1f``, which SillyTavern's lexer does not).
WS = re.escape(JS_WHITESPACE)

TOKEN_OPEN = 1
TOKEN_CLOSE = 2
TOKEN_SEP = 3
TOKEN_PIPE = 4

#: Every structural token: a run of ``{`` (two or more), ``}}``, ``::`` and ``|``. There are
#: no groups (the first character tells the kind): a pattern of plain alternatives lets the
#: regex engine skip ahead to candidate characters instead of trying every position.
TOKENS = re.compile(r"\{\{+|\}\}|::|\|")
#: The same, plus (first) a whole macro with no brace inside, which the parser takes in one go.
FAST_TOKENS = re.compile(r"\{\{(?!\{)[^{}]*\}\}|\{\{+|\}\}|::|\|")
#: Token kind by first character.
KIND_BY_CHAR = {"{": TOKEN_OPEN, "}": TOKEN_CLOSE, ":": TOKEN_SEP, "|": TOKEN_PIPE}

#: The common macro head in one match: flags, name, dropped characters, spaces, separator.
MACRO_HEAD = re.compile(
    rf"\{{\{{((?:[{WS}!?~#>]|/(?!/))*)"
    rf"(?:([A-Za-z][A-Za-z0-9_-]*)([^{WS}:|}}]*)([{WS}]*)(::|:)?)?"
)
#: Whitespace and flags between ``{{`` and the name (``/`` only when not the start of ``//``).
HEAD = re.compile(rf"(?:[{WS}!?~#>]|/(?!/))*")
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
#: What the lexer drops after a name before whitespace, ``:``, ``|`` or ``}``.
DROPPED = re.compile(rf"[^{WS}:|}}]*")
SPACES = re.compile(rf"[{WS}]*")

_SEGMENT = r"[^\W\d_](?:[\w-]*\w)?"
_QUOTED = r"""(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
#: A shorthand variable name: SillyTavern's identifier, extended with Core Profile paths.
VARIABLE_NAME = re.compile(rf"{_SEGMENT}(?:\.(?:[\w](?:[\w-]*\w)?)|\[[{WS}]*{_QUOTED}[{WS}]*\])*")
#: Shorthand operators, longest first.
VARIABLE_OPERATOR = re.compile(r"\+\+|--|\?\?=|\?\?|\|\|=|\|\||-=|==|!=|>=|>|<=|<|\+=|=")


def tokenize(src: str) -> list[tuple[int, int, int]]:
    """All structural tokens of ``src`` as ``(kind, start, end)``, in order."""
    return [(KIND_BY_CHAR[m.group()[0]], m.start(), m.end()) for m in TOKENS.finditer(src)]
