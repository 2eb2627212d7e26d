"""The parsed form of a template: text, macro, scoped block, variable shorthand and raw fragment
nodes, each carrying its position in the source.

Plain text is kept as ``str`` items so the evaluator can copy it without a method call. Nodes
are slotted and never changed after parsing (except memos: a block's content, paired on first
use, and its ``if`` split), so one parsed template is shared by every evaluation of the same
text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Union, final

if TYPE_CHECKING:
    from engine.macros.pairing import Level


class Arg:
    """One argument (or the content of a scoped block): its position, items and source text.

    ``items`` are paired. ``level``/``lo``/``hi`` name the same items before scoped pairing, as
    a window of a :class:`~engine.macros.pairing.Level` (``{{if}}`` splits on them, as
    SillyTavern does); ``level`` is ``None`` when the argument holds no macro. ``plain`` is the
    text when the argument holds no macro. ``text`` is the source text (trimmed for an argument,
    as written for a block's content).
    """

    __slots__ = ("src", "start", "end", "items", "plain", "level", "lo", "hi")

    def __init__(
        self,
        src: str,
        start: int,
        end: int,
        items: list[Item],
        level: Level | None = None,
        lo: int = 0,
        hi: int = 0,
        text: str | None = None,
    ) -> None:
        self.src = src
        self.start = start
        self.end = end
        self.items = items
        self.level = level
        self.lo = lo
        self.hi = hi
        self.plain: str | None = None
        for item in items:
            if item.__class__ is not str:
                break
        else:  # no node: the text is the value (sliced only here, never for a long block)
            self.plain = src[start:end] if text is None else text

    @property
    def text(self) -> str:
        """The argument's source text."""
        plain = self.plain
        return plain if plain is not None else self.src[self.start : self.end]


@final
class Macro:
    """``{{flags name args}}``; ``closing`` for ``{{/name}}``; ``dropped`` when characters after
    the name failed to lex and were skipped (SillyTavern drops them)."""

    __slots__ = (
        "src",
        "start",
        "end",
        "name",
        "lname",
        "flags",
        "closing",
        "preserve",
        "_args",
        "plain_args",
        "_spans",
        "dropped",
    )

    def __init__(
        self,
        src: str,
        start: int,
        end: int,
        name: str,
        flags: str,
        args: tuple[Arg, ...] | None,
        dropped: bool,
        plain_args: tuple[str, ...] | None = None,
        spans: tuple[int, ...] = (),
    ) -> None:
        self.src = src
        self.start = start
        self.end = end
        self.name = name
        self.lname = name.lower()
        self.flags = flags
        self.closing = "/" in flags
        self.preserve = "#" in flags
        self._args = args
        self.dropped = dropped
        # Brace-free arguments are kept as their trimmed texts (and start offsets); the Arg
        # objects are only built when something needs them (an if, a raw fallback).
        self.plain_args = plain_args
        self._spans = spans

    @property
    def args(self) -> tuple[Arg, ...]:
        """The arguments (built on first use for brace-free ones)."""
        args = self._args
        if args is None:
            built = []
            src = self.src
            for text, start in zip(self.plain_args or (), self._spans, strict=True):
                items: list[Item] = [text] if text else []
                built.append(Arg(src, start, start + len(text), items, text=text))
            args = self._args = tuple(built)
        return args

    @property
    def arg_count(self) -> int:
        """How many inline arguments the macro has."""
        plain = self.plain_args
        return len(plain) if plain is not None else len(self.args)

    @property
    def raw(self) -> str:
        """The macro's source text."""
        return self.src[self.start : self.end]


@final
class VarExpr:
    """``{{.name op value}}`` (``scope`` local) or ``{{$name op value}}`` (global)."""

    __slots__ = ("src", "start", "end", "scope", "name", "op", "value")

    def __init__(
        self, src: str, start: int, end: int, scope: str, name: str, op: str, value: Arg | None
    ) -> None:
        self.src = src
        self.start = start
        self.end = end
        self.scope = scope
        self.name = name
        self.op = op
        self.value = value

    @property
    def raw(self) -> str:
        """The shorthand's source text."""
        return self.src[self.start : self.end]


@final
class Scoped:
    """An opener paired with its closing tag; the content becomes the last argument.

    The content is paired only when first used (a block nested thousands of levels deep costs
    nothing below the depth evaluation reaches); it is the window ``lo:hi`` of ``level``, at
    pairing depth ``depth``. ``split_cache`` memoises the ``{{if}}`` then/else split per case
    mode.
    """

    __slots__ = (
        "src",
        "start",
        "end",
        "opener",
        "close_start",
        "level",
        "lo",
        "hi",
        "depth",
        "_content",
        "split_cache",
    )

    def __init__(
        self, opener: Macro, closer: Macro, level: Level, lo: int, hi: int, depth: int
    ) -> None:
        self.src = opener.src
        self.start = opener.start
        self.end = closer.end
        self.opener = opener
        self.close_start = closer.start
        self.level = level
        self.lo = lo
        self.hi = hi
        self.depth = depth
        self._content: Arg | None = None
        self.split_cache: dict[bool, tuple[list[Item], list[Item] | None, int, int]] = {}

    @property
    def content(self) -> Arg:
        """The block's content (paired on first use; a race only pairs it twice)."""
        content = self._content
        if content is None:
            level = self.level
            items = level.pair(self.lo, self.hi, self.depth)
            content = Arg(
                self.src, self.opener.end, self.close_start, items, level, self.lo, self.hi
            )
            self._content = content
        return content

    @property
    def raw(self) -> str:
        """The whole block's source text."""
        return self.src[self.start : self.end]


@final
class RawMacro:
    """A tag kept as written: an unmatched closing tag, or a pair whose opener takes no content.
    ``code`` is the warning to report each time it is evaluated (``None`` for none)."""

    __slots__ = ("text", "start", "name", "code")

    def __init__(self, text: str, start: int, name: str, code: str | None) -> None:
        self.text = text
        self.start = start
        self.name = name
        self.code = code


Node = Union[Macro, VarExpr, Scoped, RawMacro]  # noqa: UP007 - used at runtime in isinstance
Item = Union[str, Macro, VarExpr, Scoped, RawMacro]  # noqa: UP007


class ParseNote:
    """A problem found while parsing, reported as a warning by every evaluation of the template."""

    __slots__ = ("code", "position", "message", "name")

    def __init__(self, code: str, position: int, message: str, name: str = "") -> None:
        self.code = code
        self.position = position
        self.message = message
        self.name = name


class Template:
    """A parsed template: the pre-processed source, its items and parse notes.

    ``original`` is the text as given (SillyTavern hashes it for ``{{pick}}``).
    """

    __slots__ = ("original", "src", "items", "notes", "_content_hash", "_rewrites")

    def __init__(
        self,
        original: str,
        src: str,
        items: list[Item],
        notes: tuple[ParseNote, ...],
    ) -> None:
        self.original = original
        self.src = src
        self.items = items
        self.notes = notes
        self._content_hash: int | None = None
        self._rewrites: tuple[tuple[int, int, int], ...] | None = None

    def original_position(self, position: int) -> int:
        """A position in :attr:`src` as a position in :attr:`original` (legacy syntax that
        pre-processing rewrote shifts what follows it)."""
        if self.src == self.original:
            return position
        if self._rewrites is None:
            from engine.macros.processing import rewrites

            self._rewrites = rewrites(self.original)
        from engine.macros.processing import original_position

        return original_position(self._rewrites, position)

    def content_hash(self) -> int:
        """SillyTavern's string hash of the original text (computed once, on first use)."""
        if self._content_hash is None:
            from engine.macros.randomness import string_hash

            self._content_hash = string_hash(self.original)
        return self._content_hash


def raw_of(item: Item) -> str:
    """The source text of an item."""
    if item.__class__ is str:
        return item
    if item.__class__ is RawMacro:
        return item.text
    return item.src[item.start : item.end]  # type: ignore[union-attr]


def raw_join(items: list[Item]) -> str:
    """The source text of a list of items."""
    return "".join([raw_of(item) for item in items])


def first_position(items: list[Item]) -> int:
    """The position of the first node among ``items`` (0 when there is none)."""
    for item in items:
        if item.__class__ is not str:
            return item.start  # type: ignore[union-attr]
    return 0
