"""The JS -> Python pattern translator behind :mod:`engine.prompt.jsregex` (see its notes)."""

from __future__ import annotations

import regex  # type: ignore[import-untyped]  # no stubs are installed

from engine.errors import FormatError

_LINE_TERMINATORS = "\\n\\r\\u2028\\u2029"
_WORD = "A-Za-z0-9_"
_SPACE = "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_DIGIT = "0-9"
_CLASS_BODY = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
_SYNTAX_CHARS = frozenset("^$\\.*+?()[]{}|/")
_FOLD_TRAPS = "\u017f\u212a"  # ſ and the Kelvin sign
_CONTROL_ESCAPES = {"t": "\t", "n": "\n", "v": "\v", "f": "\f", "r": "\r"}


class JsRegexError(FormatError):
    """A JS pattern is invalid (JS would throw) or cannot be translated."""


def translate(source: str, flags: str) -> tuple[str, int, dict[str, int]]:
    """The Python pattern for a JS pattern, its capture-group count and its group names."""
    translator = _Translator(source, flags)
    return translator.translate(), translator.group_count, translator.names


class _Translator:
    """One pass over a JS pattern, emitting the Python pattern."""

    def __init__(self, source: str, flags: str) -> None:
        self.src = source
        self.unicode = "u" in flags
        self.ignore_case = "i" in flags
        self.dotall = "s" in flags
        self.multiline = "m" in flags
        self.pos = 0
        self.group_count, self.names = _scan_groups(source)
        self.groups_opened = 0
        self.open_groups: list[int] = []  # numbers of the capturing groups now open, or 0

    def fail(self, problem: str) -> JsRegexError:
        return JsRegexError(f"invalid regular expression /{self.src}/: {problem}", field="regex")

    def ascii_set(self, body: str, negate: bool = False) -> str:
        """A JS built-in set; ``(?-i:...)`` keeps Python's case folding from widening it."""
        cls = f"[{'^' if negate else ''}{body}]"
        # With `u` and `i`, JS \w does fold ſ and K into s and k, like Python; keep `i` then.
        return cls if self.unicode or not self.ignore_case else f"(?-i:{cls})"

    @property
    def ascii_fold_only(self) -> bool:
        """JS ``i`` without ``u`` never folds a non-ASCII character into an ASCII one."""
        return self.ignore_case and not self.unicode

    def literal(self, ch: str) -> str:
        """One literal character outside a class, with JS's case folding."""
        if self.ascii_fold_only:
            if ch in _FOLD_TRAPS:
                return f"(?-i:{_literal(ch)})"  # ſ and K match only themselves
            if ch in "sSkK":
                return f"(?-i:(?![{_FOLD_TRAPS}])){ch}"  # and s, k never match them
        return _literal(ch)

    def translate(self) -> str:
        out: list[str] = []
        can_repeat = False  # whether a quantifier may follow what was just emitted
        stack: list[str] = []  # the open groups, by their opening text
        src = self.src
        while self.pos < len(src):
            ch = src[self.pos]
            if ch == "\\":
                text, can_repeat = self.escape()
                out.append(text)
                continue
            if ch == "[":
                out.append(self.char_class())
                can_repeat = True
                continue
            if ch == "(":
                opened = self.group_open()
                out.append(opened)
                stack.append(opened)
                can_repeat = False
                continue
            if ch in "*+?{":
                quant = self.quantifier()
                if quant is not None:
                    if not can_repeat:
                        raise self.fail("nothing to repeat")
                    out.append(quant)
                    can_repeat = False
                    continue
                if self.unicode:
                    raise self.fail("lone quantifier brackets")
            self.pos += 1
            if ch == ")":
                if not stack:
                    raise self.fail("unmatched ')'")
                opened = stack.pop()
                self.open_groups.pop()
                out.append(")")
                # JS never lets a look-behind be repeated, nor a look-ahead with `u`.
                if opened in ("(?<=", "(?<!"):
                    can_repeat = False
                elif opened in ("(?=", "(?!"):
                    can_repeat = not self.unicode
                else:
                    can_repeat = True
            elif ch == "|":
                out.append("|")
                can_repeat = False
            elif ch == ".":
                out.append("(?s:.)" if self.dotall else f"[^{_LINE_TERMINATORS}]")
                can_repeat = True
            elif ch == "^":
                out.append(f"(?<![^{_LINE_TERMINATORS}])" if self.multiline else "\\A")
                can_repeat = False
            elif ch == "$":
                out.append(f"(?![^{_LINE_TERMINATORS}])" if self.multiline else "\\Z")
                can_repeat = False
            else:
                if ch in "]}" and self.unicode:
                    raise self.fail(f"lone {ch!r}")
                out.append(self.literal(ch))
                can_repeat = True
        if stack:
            raise self.fail("unterminated group")
        return "".join(out)

    def quantifier(self) -> str | None:
        """``*``, ``+``, ``?``, ``{n}``, ``{n,}`` or ``{n,m}`` (maybe lazy) at ``pos``, or None."""
        ch = self.src[self.pos]
        if ch == "{":
            found = _BRACES.match(self.src, self.pos)
            if found is None:
                return None  # Annex B: a "{" that is not a quantifier is literal
            low, comma, high = found.group(1), found.group(2), found.group(3)
            if high and int(high) < int(low):
                raise self.fail("numbers out of order in {} quantifier")
            self.pos = found.end()
            text = f"{{{int(low)}{',' if comma else ''}{int(high) if high else ''}}}"
        else:
            self.pos += 1
            text = ch
        if self.pos < len(self.src) and self.src[self.pos] == "?":
            self.pos += 1
            text += "?"
        return text

    def group_open(self) -> str:
        src, pos = self.src, self.pos
        if not src.startswith("(?", pos):
            self.pos += 1
            return self.capture()
        for prefix in ("(?:", "(?=", "(?!", "(?<=", "(?<!"):
            if src.startswith(prefix, pos):
                self.pos += len(prefix)
                self.open_groups.append(0)
                return prefix
        found = _GROUP_NAME.match(src, pos)
        if found is None:
            raise self.fail("invalid group")
        self.pos = found.end()
        return self.capture()  # named groups become numbered ones; `names` maps them

    def capture(self) -> str:
        self.groups_opened += 1
        self.open_groups.append(self.groups_opened)
        return "("

    def backref(self, number: int) -> str:
        """A back-reference; JS matches "" for a group that has not matched (yet)."""
        if number in self.open_groups:
            return "(?:)"  # inside its own group it is always still unset in JS
        return f"(?({number})\\{number})"

    def escape(self) -> tuple[str, bool]:
        """Translate the escape at ``pos`` (outside a class); also says if it may be repeated."""
        src = self.src
        if self.pos + 1 >= len(src):
            raise self.fail("\\ at end of pattern")
        ch = src[self.pos + 1]
        self.pos += 2
        if ch in "dws":
            return self.ascii_set(_CLASS_BODY[ch]), True
        if ch in "DWS":
            return self.ascii_set(_CLASS_BODY[ch.lower()], negate=True), True
        if ch in "bB":
            w = self.ascii_set(_WORD)
            boundary = f"(?:(?<={w})(?!{w})|(?<!{w})(?={w}))"
            return (boundary if ch == "b" else f"(?!{boundary})"), False
        if ch in "0123456789":
            return self.decimal_escape(ch), True
        if ch == "k" and (self.unicode or self.names):
            found = _NAMED_REF.match(src, self.pos)
            if found is None or found.group(1) not in self.names:
                raise self.fail("invalid named reference")
            self.pos = found.end()
            return self.backref(self.names[found.group(1)]), True
        if ch in "pP" and self.unicode:
            found = _PROPERTY.match(src, self.pos)
            if found is None:
                raise self.fail("invalid property name")
            self.pos = found.end()
            return f"\\{ch}{found.group(0)}", True  # the `regex` package knows \p{...}
        return self.literal(self.char_escape(ch)), True

    def decimal_escape(self, first: str) -> str:
        """``\\N``: a back-reference if group N exists, else (Annex B) octal or the digit."""
        src = self.src
        start = self.pos - 1
        end = start
        while end < len(src) and src[end] in "0123456789":
            end += 1
        if first == "0":
            if self.unicode:
                if end > start + 1:
                    raise self.fail("invalid decimal escape")
                return "\\x00"
            self.pos = start
            return self.literal(self.legacy_octal())
        number = int(src[start:end])
        if number <= self.group_count:
            self.pos = end
            return self.backref(number)
        if self.unicode:
            raise self.fail("invalid escape")
        if first in "89":
            return first
        self.pos = start
        return self.literal(self.legacy_octal())

    def legacy_octal(self) -> str:
        """Annex B octal escape at ``pos``: up to three octal digits, value at most 0o377."""
        src = self.src
        value = 0
        used = 0
        while self.pos < len(src) and src[self.pos] in "01234567" and used < 3:
            candidate = value * 8 + int(src[self.pos])
            if candidate > 0o377:
                break
            value, used = candidate, used + 1
            self.pos += 1
        return chr(value)

    def char_escape(self, ch: str, *, in_class: bool = False) -> str:
        """The character an escape ``\\<ch>`` (``pos`` is after ``ch``) stands for."""
        src = self.src
        if ch in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[ch]
        if ch == "c":
            if self.pos < len(src) and src[self.pos].isascii() and src[self.pos].isalpha():
                self.pos += 1
                return chr(ord(src[self.pos - 1]) % 32)
            if self.unicode:
                raise self.fail("invalid unicode escape")
            self.pos -= 1  # Annex B: "\\c" is a literal backslash, then "c" is read again
            return "\\"
        if ch == "x":
            found = _HEX2.match(src, self.pos)
            if found:
                self.pos = found.end()
                return chr(int(found.group(0), 16))
        elif ch == "u":
            found = _HEX4.match(src, self.pos)
            if found:
                self.pos = found.end()
                return chr(int(found.group(0), 16))
            if self.unicode:
                found = _HEX_BRACED.match(src, self.pos)
                if found and int(found.group(1), 16) <= 0x10FFFF:
                    self.pos = found.end()
                    return chr(int(found.group(1), 16))
        if self.unicode and ch not in _SYNTAX_CHARS and not (ch == "-" and in_class):
            raise self.fail(f"invalid escape \\{ch}")
        return ch  # identity escape

    def char_class(self) -> str:
        """Translate ``[...]`` at ``pos``; JS ``[]`` matches nothing and ``[^]`` anything."""
        src = self.src
        self.pos += 1
        negate = self.pos < len(src) and src[self.pos] == "^"
        if negate:
            self.pos += 1
        atoms: list[tuple[str, str]] = []  # (kind, value): char | dash | set | nset
        while True:
            if self.pos >= len(src):
                raise self.fail("unterminated character class")
            ch = src[self.pos]
            if ch == "]":
                self.pos += 1
                break
            if ch == "\\":
                atoms.append(self.class_escape())
            else:
                self.pos += 1
                atoms.append(("dash" if ch == "-" else "char", ch))
        body: list[str] = []
        negated_sets: list[str] = []  # alternatives matched outside the class
        covered: set[str] = set()
        i = 0
        while i < len(atoms):
            kind, value = atoms[i]
            ranged = i + 2 < len(atoms) and atoms[i + 1][0] == "dash"
            endpoints_are_chars = (
                ranged and kind in ("char", "dash") and atoms[i + 2][0] in ("char", "dash")
            )
            if ranged and not endpoints_are_chars and self.unicode:
                raise self.fail("invalid character class range")  # `[\\d-z]` with `u`
            if ranged and endpoints_are_chars:
                high = atoms[i + 2][1]
                if ord(value) > ord(high):
                    raise self.fail("range out of order in character class")
                body.append(f"{_class_char(value)}-{_class_char(high)}")
                covered.update(t for t in _FOLD_TRAPS if ord(value) <= ord(t) <= ord(high))
                i += 3
                continue
            if kind == "set" and self.ascii_fold_only:
                negated_sets.append(self.ascii_set(value))  # scoped, so kept outside the class
            elif kind == "set":
                body.append(value)
            elif kind == "nset":
                negated_sets.append(value)
            elif value in _FOLD_TRAPS and self.ascii_fold_only:
                # in a Python class ſ would also match s and S under `i`
                negated_sets.append(f"(?-i:{_class_char(value)})")
                covered.add(value)
            else:
                body.append(_class_char(value))
            i += 1
        alternatives = ([f"[{''.join(body)}]"] if body else []) + negated_sets
        # Python's `i` folds ſ and K into s and k; JS without `u` does not: only a class that
        # names them literally contains them.
        traps = "".join(t for t in _FOLD_TRAPS if t not in covered) if self.ascii_fold_only else ""
        if negate:
            if not alternatives:
                return "(?s:.)"
            rest = f"(?!{'|'.join(alternatives)})(?s:.)"
            return f"(?:(?-i:[{traps}])|{rest})" if traps else f"(?:{rest})"
        if not alternatives:
            return "(?!)"
        joined = alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"
        return f"(?:(?-i:(?![{traps}])){joined})" if traps else joined

    def class_escape(self) -> tuple[str, str]:
        """An escape inside a class, as a ``(kind, value)`` atom."""
        src = self.src
        if self.pos + 1 >= len(src):
            raise self.fail("\\ at end of pattern")
        ch = src[self.pos + 1]
        self.pos += 2
        if ch in "dws":
            return "set", _CLASS_BODY[ch]
        if ch in "DWS":
            return "nset", self.ascii_set(_CLASS_BODY[ch.lower()], negate=True)
        if ch == "b":
            return "char", "\b"
        if ch in "0123456789":
            if self.unicode:
                if ch == "0" and not (self.pos < len(src) and src[self.pos] in "0123456789"):
                    return "char", "\x00"
                raise self.fail("invalid class escape")
            if ch in "89":
                return "char", ch
            self.pos -= 1
            return "char", self.legacy_octal()
        if ch == "c" and not self.unicode and self.pos < len(src):
            nxt = src[self.pos]
            # Annex B: inside a class, \c also takes digits and underscore.
            if nxt.isascii() and (nxt.isalnum() or nxt == "_"):
                self.pos += 1
                return "char", chr(ord(nxt) % 32)
        if ch in "pP" and self.unicode:
            found = _PROPERTY.match(src, self.pos)
            if found is None:
                raise self.fail("invalid property name")
            self.pos = found.end()
            return "set", f"\\{ch}{found.group(0)}"
        return "char", self.char_escape(ch, in_class=True)


def _literal(ch: str) -> str:
    """One character as a Python pattern that matches exactly it."""
    if ch.isascii() and (ch.isalnum() or ch in "_ "):
        return ch
    return _class_char(ch)


def _class_char(ch: str) -> str:
    """One character, escaped so it is literal inside or outside a Python class."""
    if ch.isascii() and (ch.isalnum() or ch == "_"):
        return ch
    code = ord(ch)
    return f"\\U{code:08x}" if code > 0xFFFF else f"\\u{code:04x}"


def _scan_groups(source: str) -> tuple[int, dict[str, int]]:
    """Count capturing groups and map group names to numbers (skipping escapes and classes)."""
    count = 0
    names: dict[str, int] = {}
    pos = 0
    in_class = False
    while pos < len(source):
        ch = source[pos]
        if ch == "\\":
            pos += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            if not source.startswith("(?", pos):
                count += 1
            else:
                found = _GROUP_NAME.match(source, pos)
                if found is not None:
                    count += 1
                    if found.group(1) in names:
                        raise JsRegexError(
                            f"invalid regular expression /{source}/: duplicate capture group "
                            f"name {found.group(1)!r}",
                            field="regex",
                        )
                    names[found.group(1)] = count
        pos += 1
    return count, names


_BRACES = regex.compile(r"\{([0-9]+)(,?)([0-9]*)\}")
_PROPERTY = regex.compile(r"\{[A-Za-z_=]+\}")
_GROUP_NAME = regex.compile(r"\(\?<([A-Za-z_$\p{L}][\w$\p{L}\p{N}]*)>")
_NAMED_REF = regex.compile(r"<([A-Za-z_$\p{L}][\w$\p{L}\p{N}]*)>")
_HEX2 = regex.compile(r"[0-9A-Fa-f]{2}")
_HEX4 = regex.compile(r"[0-9A-Fa-f]{4}")
_HEX_BRACED = regex.compile(r"\{([0-9A-Fa-f]{1,6})\}")


def has_nested_quantifier(source: str) -> bool:
    """Whether a repeated group itself holds an unbounded repeat, as in ``(a+)+`` or ``(a*b)*``.

    That shape can backtrack exponentially; it is only a risk, not an error (the ``regex``
    package solves many such cases quickly, and every match runs under a timeout anyway).
    """
    inner_unbounded: list[bool] = []  # per open group: does it hold an unbounded repeat?
    pos = 0
    in_class = False
    last_group_unbounded = False  # the group that just closed held an unbounded repeat
    while pos < len(source):
        ch = source[pos]
        if ch == "\\":
            pos += 2
            last_group_unbounded = False
            continue
        if in_class:
            in_class = ch != "]"
            pos += 1
            continue
        unbounded = ch in "*+" or (ch == "{" and _OPEN_BRACES.match(source, pos) is not None)
        if unbounded:
            if last_group_unbounded:
                return True
            if inner_unbounded:
                inner_unbounded[-1] = True
        last_group_unbounded = False
        if ch == "[":
            in_class = True
        elif ch == "(":
            inner_unbounded.append(False)
        elif ch == ")" and inner_unbounded:
            held = inner_unbounded.pop()
            last_group_unbounded = held
            if held and inner_unbounded:
                inner_unbounded[-1] = True
        pos += 1
    return False


_OPEN_BRACES = regex.compile(r"\{[0-9]+,\}")
