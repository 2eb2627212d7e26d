"""The macro parser: tokens -> items (text, macros, shorthands), then scoped-block pairing.

It keeps a stack of open macros, as SillyTavern's modal lexer does, so it never backtracks:
``}}`` closes the innermost open macro at its first occurrence, a macro still open at the end
of the text is flattened back to text (its complete nested macros are kept), and a ``|`` in
a macro's arguments (reserved filter syntax) keeps that macro raw. Pairing then matches
``{{name}}...{{/name}}`` at each document level, as SillyTavern's walker does.
"""

from __future__ import annotations

import re

from engine.macros import lexer
from engine.macros.diagnostics import MACRO_PARSE_FAILED
from engine.macros.jsvalues import JS_WHITESPACE
from engine.macros.limits import PARSE_NESTING_LIMIT
from engine.macros.nodes import Arg, Item, Macro, ParseNote, VarExpr
from engine.macros.pairing import AcceptRule, pair_items, pair_level

_NO_CHILDREN: list[Item] = []
_MODE_DOUBLE = 0
_MODE_SINGLE = 1
_MODE_SPACE = 2
_MODE_VALUE = 3


class _Frame:
    """A macro whose ``}}`` has not been seen yet."""

    __slots__ = (
        "start",
        "body",
        "mode",
        "name",
        "flags",
        "dropped",
        "seps",
        "children",
        "broken",
        "scope",
    )

    def __init__(self, start: int, body: int, mode: int, name: str, flags: str) -> None:
        self.start = start
        self.body = body
        self.mode = mode
        self.name = name
        self.flags = flags
        self.dropped = False
        self.seps: list[tuple[int, int]] = []
        self.children: list[Item] = []
        self.broken = False
        self.scope = ""


def _interleave(src: str, a: int, b: int, children: list[Item]) -> list[Item]:
    """Text of ``src[a:b]`` with the child nodes that lie inside it, in order."""
    out: list[Item] = []
    pos = a
    for child in children:
        start = child.start  # type: ignore[union-attr]
        if start < a:
            continue
        if start >= b:
            break
        if start > pos:
            out.append(src[pos:start])
        out.append(child)
        pos = child.end  # type: ignore[union-attr]
    if pos < b:
        out.append(src[pos:b])
    return out


def _unterminated(frame: _Frame) -> ParseNote:
    """The parse error SillyTavern logs for a macro whose ``}}`` never comes."""
    name = frame.name
    if frame.mode == _MODE_VALUE:
        name = ("." if frame.scope == "local" else "$") + name
    return ParseNote(
        MACRO_PARSE_FAILED,
        frame.start,
        f"'{{{{{name}' is never closed by '}}}}'; it is kept as text from here on",
        frame.name,
    )


def _note_position(note: ParseNote) -> int:
    return note.position


class Parser:
    """Parses one pre-processed source text; ``can_accept`` comes from the macro registry."""

    def __init__(self, src: str, can_accept: AcceptRule, *, fast: bool = True) -> None:
        self.src = src
        self.can_accept = can_accept
        self.fast = fast
        self.notes: list[ParseNote] = []

    # -- items -------------------------------------------------------------------------------

    def parse(self) -> list[Item]:
        """The document's items, paired."""
        src = self.src
        if "{{" not in src:
            return [src] if src else []
        self._stack: list[_Frame] = []
        self._top: list[Item] = []
        self._skip = 0
        if not self.fast:  # one token at a time (the reference path the fast one must match)
            self._general(0, len(src))
        kinds = lexer.KIND_BY_CHAR
        head_at = lexer.MACRO_HEAD.match
        for token in lexer.FAST_TOKENS.finditer(src) if self.fast else ():
            start, end = token.span()
            if src[end - 1] == "}" and src[start] == "{":  # a whole brace-free macro
                if start < self._skip:
                    self._general(self._skip, end)
                    continue
                if len(self._stack) < PARSE_NESTING_LIMIT:
                    head = head_at(src, start)
                    if head is not None and head.group(2) is not None:
                        self._simple_macro(head, start, end)
                        continue
                self._simple(start, end)
            elif start >= self._skip:
                self._token(kinds[src[start]], start, end)
        stack = self._stack
        top = self._top
        while stack:  # unterminated: the macro is text again, nested complete macros stay
            frame = stack.pop()
            (stack[-1].children if stack else top).extend(frame.children)
            self.notes.append(_unterminated(frame))
        if self.notes:  # SillyTavern lists parse errors in text order
            self.notes.sort(key=_note_position)
        _, items = pair_level(
            src, _interleave(src, 0, len(src), top), 0, self.can_accept, self.notes
        )
        return items

    def _general(self, a: int, b: int) -> None:
        """Process the structural tokens of ``src[a:b]`` one by one."""
        src = self.src
        kinds = lexer.KIND_BY_CHAR
        for token in lexer.TOKENS.finditer(src, a, b):
            start, end = token.span()
            if start >= self._skip:
                self._token(kinds[src[start]], start, end)

    def _simple(self, start: int, end: int) -> None:
        """A ``{{...}}`` span without braces inside: head, separators and close at once."""
        stack = self._stack
        if len(stack) >= PARSE_NESTING_LIMIT:
            self._general(start, end)
            return
        src = self.src
        head = lexer.MACRO_HEAD.match(src, start)
        if head is not None and head.group(2) is not None:
            self._simple_macro(head, start, end)
            return
        depth = len(stack)
        skip = self._open(start, stack, self._top)
        if skip == start:  # not a macro: its '}}' and separators belong to the enclosing one
            self._general(start + 2, end)
            return
        self._skip = skip
        if len(stack) == depth:
            return  # a shorthand finished by its head
        frame = stack[-1]
        close = end - 2
        if frame.mode == _MODE_DOUBLE:
            found = src.find("::", skip, close)
            while found >= 0:
                frame.seps.append((found, found + 2))
                found = src.find("::", found + 2, close)
        if frame.mode != _MODE_VALUE and src.find("|", skip, close) >= 0:
            frame.broken = True
        stack.pop()
        node_items = self._close(frame, close)
        (stack[-1].children if stack else self._top).extend(node_items)
        self._skip = end

    def _simple_macro(self, head: re.Match[str], start: int, end: int) -> None:
        """A named macro with no braces inside, built straight from its head match."""
        src = self.src
        flags, name, _, _, sep = head.groups()
        if flags:
            flags = "".join(ch for ch in flags if ch in "!?~#/>")
        close = end - 2
        self._skip = end
        body = head.end() if sep is not None else head.end(3)
        if src.find("|", body, close) >= 0:
            return  # reserved filter syntax: the macro stays text
        texts: list[str] = []
        starts: list[int] = []
        if sep == "::":
            a = body
            found = src.find("::", a, close)
            while found >= 0:
                self._plain_text(a, found, texts, starts)
                a = found + 2
                found = src.find("::", a, close)
            self._plain_text(a, close, texts, starts)
        else:
            self._plain_text(body, close, texts, starts)
            if not texts[0]:
                if sep is not None:
                    self.notes.append(
                        ParseNote(MACRO_PARSE_FAILED, start, "nothing after ':'", name)
                    )
                    return
                texts.clear()
                starts.clear()
        dropped = head.end(3) > head.end(2)
        if dropped:
            self.notes.append(
                ParseNote(
                    MACRO_PARSE_FAILED,
                    start,
                    f"characters after the macro name '{name}' were ignored",
                    name,
                )
            )
        node = Macro(src, start, end, name, flags, None, dropped, tuple(texts), tuple(starts))
        (self._stack[-1].children if self._stack else self._top).append(node)

    def _token(self, kind: int, start: int, end: int) -> None:
        """One structural token (``kind`` as in :data:`lexer.TOKENS`)."""
        stack = self._stack
        if kind == lexer.TOKEN_OPEN:
            if stack and (end - start) % 2:
                return  # an odd brace run inside arguments never opens a macro
            at = end - 2
            if len(stack) >= PARSE_NESTING_LIMIT:
                self.notes.append(
                    ParseNote(MACRO_PARSE_FAILED, at, "macros nested too deeply; kept as text")
                )
                return
            self._skip = self._open(at, stack, self._top)
        elif not stack:
            return
        elif kind == lexer.TOKEN_CLOSE:
            frame = stack.pop()
            node_items = self._close(frame, start)
            (stack[-1].children if stack else self._top).extend(node_items)
        elif kind == lexer.TOKEN_SEP:
            frame = stack[-1]
            if frame.mode == _MODE_DOUBLE:
                frame.seps.append((start, end))
        else:  # a pipe: reserved filter syntax keeps the macro raw
            frame = stack[-1]
            if frame.mode != _MODE_VALUE:
                frame.broken = True

    def _open(self, at: int, stack: list[_Frame], top: list[Item]) -> int:
        """Read a macro head at ``at``; push a frame or add a finished node. Returns the
        position before which tokens belong to the head (``at`` when it is not a macro)."""
        src = self.src
        head = lexer.MACRO_HEAD.match(src, at)
        if head is None:  # pragma: no cover - the pattern always matches '{{'
            return at
        flags = head.group(1)
        if flags:
            flags = "".join(ch for ch in flags if ch in "!?~#/>")
        name = head.group(2)
        if name is None:
            pos = head.end(1)
            if src.startswith("//", pos):
                frame = _Frame(at, pos + 2, _MODE_SPACE, "//", flags)
                body = self._arg_mode(frame, pos + 2)
                stack.append(frame)
                return body
            if pos < len(src) and src[pos] in ".$":
                return self._open_variable(at, pos, stack, top)
            return at
        sep = head.group(5)
        if sep == "::":
            frame = _Frame(at, head.end(), _MODE_DOUBLE, name, flags)
        elif sep is not None:
            frame = _Frame(at, head.end(), _MODE_SINGLE, name, flags)
        else:
            frame = _Frame(at, head.end(3), _MODE_SPACE, name, flags)
        if head.end(3) > head.end(2):
            frame.dropped = True
        stack.append(frame)
        return frame.body

    def _arg_mode(self, frame: _Frame, pos: int) -> int:
        """Decide between ``::`` arguments, the single-colon form and the space form."""
        src = self.src
        spaces = lexer.SPACES.match(src, pos)
        after = spaces.end() if spaces else pos
        if src.startswith("::", after):
            frame.mode = _MODE_DOUBLE
            frame.body = after + 2
        elif src.startswith(":", after):
            frame.mode = _MODE_SINGLE
            frame.body = after + 1
        else:
            frame.mode = _MODE_SPACE
            frame.body = pos
        return frame.body

    def _open_variable(self, at: int, pos: int, stack: list[_Frame], top: list[Item]) -> int:
        src = self.src
        scope = "local" if src[pos] == "." else "global"
        spaces = lexer.SPACES.match(src, pos + 1)
        pos = spaces.end() if spaces else pos + 1
        name_match = lexer.VARIABLE_NAME.match(src, pos)
        name = ""
        if name_match is not None:
            name = name_match.group()
            pos = name_match.end()
            spaces = lexer.SPACES.match(src, pos)
            pos = spaces.end() if spaces else pos
        op_match = lexer.VARIABLE_OPERATOR.match(src, pos) if name else None
        op = op_match.group() if op_match else ""
        if op and op not in ("++", "--"):
            frame = _Frame(at, op_match.end(), _MODE_VALUE, name, op)  # type: ignore[union-attr]
            frame.scope = scope
            stack.append(frame)
            return frame.body
        if op:
            spaces = lexer.SPACES.match(src, op_match.end())  # type: ignore[union-attr]
            pos = spaces.end() if spaces else pos
        if not src.startswith("}}", pos):
            return at
        node = VarExpr(src, at, pos + 2, scope, name, op or "get", None)
        (stack[-1].children if stack else top).append(node)
        return pos + 2

    def _close(self, frame: _Frame, close: int) -> list[Item]:
        """The items a frame becomes when its ``}}`` at ``close`` is reached."""
        src = self.src
        end = close + 2
        if frame.mode == _MODE_VALUE:
            value = self._arg(frame.body, close, frame.children)
            return [VarExpr(src, frame.start, end, frame.scope, frame.name, frame.flags, value)]
        if frame.broken:  # the macro is text again; only its nested nodes stay nodes
            return frame.children
        args: list[Arg] = []
        if frame.mode == _MODE_DOUBLE:
            # Hand each argument only its own nested nodes (one walk, not one per argument).
            children = frame.children
            count = len(children)
            first = 0
            a = frame.body
            for b, after in (*frame.seps, (close, close)):
                last = first
                while last < count and children[last].start < b:  # type: ignore[union-attr]
                    last += 1
                args.append(self._arg(a, b, children[first:last]))
                first = last
                a = after
        else:
            arg = self._arg(frame.body, close, frame.children)
            if arg.start < arg.end:
                args.append(arg)
            elif frame.mode == _MODE_SINGLE:
                self.notes.append(
                    ParseNote(MACRO_PARSE_FAILED, frame.start, "nothing after ':'", frame.name)
                )
                return frame.children
        if frame.dropped:
            self.notes.append(
                ParseNote(
                    MACRO_PARSE_FAILED,
                    frame.start,
                    f"characters after the macro name '{frame.name}' were ignored",
                    frame.name,
                )
            )
        return [Macro(src, frame.start, end, frame.name, frame.flags, tuple(args), frame.dropped)]

    def _plain_text(self, a: int, b: int, texts: list[str], starts: list[int]) -> None:
        """The trimmed text of a brace-free argument and where it starts."""
        stripped = self.src[a:b].lstrip(JS_WHITESPACE)
        starts.append(b - len(stripped))
        texts.append(stripped.rstrip(JS_WHITESPACE))

    def _arg(self, a: int, b: int, children: list[Item]) -> Arg:
        """One argument between ``a`` and ``b``, trimmed of whitespace at both ends."""
        src = self.src
        segment = src[a:b]
        stripped = segment.lstrip(JS_WHITESPACE)
        a2 = a + len(segment) - len(stripped)
        stripped = stripped.rstrip(JS_WHITESPACE)
        b2 = a2 + len(stripped)
        if not children:
            items: list[Item] = [stripped] if stripped else []
            return Arg(src, a2, b2, items, text=stripped)
        raw_items = _interleave(src, a2, b2, children)
        level, items = pair_level(src, raw_items, 1, self.can_accept, self.notes)
        return Arg(src, a2, b2, items, level, 0, len(raw_items))


__all__ = ["AcceptRule", "Parser", "pair_items"]
