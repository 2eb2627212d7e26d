"""Scoped-block pairing: ``{{name}}...{{/name}}`` at each document level, as SillyTavern's walker
does it.

For each opener (in order, outside pairs already made) the first closing tag of the same name
at depth 0 is its partner; depth counts same-name openers that could take content. An opener
that cannot take content leaves both tags raw; a closing tag without an opener stays raw with
``macro_unmatched_closing_block``; an opener without a closer is evaluated inline.

An opener's partner depends only on the tags after it, so a :class:`Level` finds every
opener's partner once, in one pass with a stack per name. Pairing a window of the level then
jumps from pair to pair: it costs time in proportion to the items at the window's top level,
and a block's content is paired only when it is evaluated. However deep blocks nest, the work
and memory stay linear in the text.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable

from engine.macros.diagnostics import (
    MACRO_ARG_ARITY_INVALID,
    MACRO_PARSE_FAILED,
    MACRO_UNMATCHED_CLOSING_BLOCK,
)
from engine.macros.limits import PAIRING_NESTING_LIMIT
from engine.macros.nodes import Item, Macro, ParseNote, RawMacro, Scoped

#: ``can_accept(lower_name, inline_arg_count)``: may this opener take scoped content?
AcceptRule = Callable[[str, int], bool]


class Level:
    """The unpaired items of one document (a whole text, an argument or a branch's source)
    and its pairing index: which macros take part, each opener's partner, which openers
    cannot take content. Built once per document; block contents are windows of it."""

    __slots__ = ("src", "items", "relevant", "partner", "refuses", "has_else", "if_index")

    def __init__(self, src: str, items: list[Item], can_accept: AcceptRule) -> None:
        self.src = src
        self.items = items
        #: Indices of the macros whose name has a closing tag here (openers and closers).
        self.relevant: list[int] = []
        #: Opener index -> the index of its partner.
        self.partner: dict[int, int] = {}
        #: Openers that have a partner but cannot take content.
        self.refuses: set[int] = set()
        #: ``{{if}}``'s split index per case mode (built on first use by the if block).
        self.if_index: dict[bool, tuple[list[int], dict[int, list[int]]]] = {}
        macros: list[Macro] = [item for item in items if item.__class__ is Macro]
        closer_names = {macro.lname for macro in macros if macro.closing}
        #: Whether an ``{{else}}`` is here at all (else no ``{{if}}`` can split).
        self.has_else = any(macro.lname == "else" for macro in macros)
        if closer_names:
            self._index(closer_names, can_accept)

    def _index(self, closer_names: set[str], can_accept: AcceptRule) -> None:
        """One pass with a stack of waiting openers per name. A closer first ends every
        opener above the topmost one that can take content (those do not count depth), then
        that one; an opener's partner is thus the first closer at depth 0 after it."""
        relevant = self.relevant
        partner = self.partner
        refuses = self.refuses
        waiting: dict[str, list[int]] = {}
        accepts: set[int] = set()
        for index, item in enumerate(self.items):
            if item.__class__ is not Macro:
                continue
            macro: Macro = item
            name = macro.lname
            if name not in closer_names:
                continue
            relevant.append(index)
            stack = waiting.get(name)
            if macro.closing:
                if not stack:
                    continue
                while stack and stack[-1] not in accepts:
                    opener = stack.pop()
                    partner[opener] = index
                    refuses.add(opener)
                if stack:
                    partner[stack.pop()] = index
                continue
            if stack is None:
                stack = waiting[name] = []
            stack.append(index)
            if can_accept(name, macro.arg_count):
                accepts.add(index)

    def pair(self, lo: int, hi: int, depth: int) -> list[Item]:
        """The items of the window ``lo:hi`` with its top-level pairs made (contents are
        paired when used); ``depth`` counts the blocks around the window."""
        items = self.items
        relevant = self.relevant
        r = bisect_left(relevant, lo)
        if r == len(relevant) or relevant[r] >= hi:
            return items if lo == 0 and hi == len(items) else items[lo:hi]
        if depth >= PAIRING_NESTING_LIMIT:
            window = items[lo:hi]
            return [_stray(it) if it.__class__ is Macro and it.closing else it for it in window]
        partner = self.partner
        refuses = self.refuses
        out: list[Item] = []
        raw_closers: set[int] = set()
        last = lo
        count = len(relevant)
        while r < count:
            k = relevant[r]
            if k >= hi:
                break
            macro: Macro = items[k]  # type: ignore[assignment]
            if macro.closing:
                out.extend(items[last:k])
                if k in raw_closers:
                    out.append(RawMacro(macro.raw, macro.start, macro.lname, None))
                else:
                    out.append(_stray(macro))
                last = k + 1
                r += 1
                continue
            j = partner.get(k, -1)
            if j < 0 or j >= hi:  # an unmatched opener is evaluated inline
                r += 1
                continue
            out.extend(items[last:k])
            if k in refuses:
                out.append(RawMacro(macro.raw, macro.start, macro.lname, MACRO_ARG_ARITY_INVALID))
                raw_closers.add(j)
                last = k + 1
                r += 1
                continue
            closer: Macro = items[j]  # type: ignore[assignment]
            out.append(Scoped(macro, closer, self, k + 1, j, depth + 1))
            last = j + 1
            r = bisect_right(relevant, j, r + 1)
        out.extend(items[last:hi])
        return out

    def too_deep(self, depth: int) -> bool:
        """True when a closing tag lies inside blocks nested to ``PAIRING_NESTING_LIMIT`` (it is
        left unpaired there). One walk over the pairing index, only when that can happen."""
        relevant = self.relevant
        if depth + (len(relevant) - 1) // 2 < PAIRING_NESTING_LIMIT:
            return False
        items = self.items
        partner = self.partner
        ends: list[int] = []
        for k in relevant:
            if ends and k == ends[-1]:
                ends.pop()
                continue
            macro: Macro = items[k]  # type: ignore[assignment]
            if depth + len(ends) >= PAIRING_NESTING_LIMIT:
                if macro.closing:
                    return True
                continue
            j = partner.get(k, -1)
            if macro.closing or j < 0 or k in self.refuses:
                continue
            if j < (ends[-1] if ends else len(items)):
                ends.append(j)
        return False


def pair_level(
    src: str, items: list[Item], depth: int, can_accept: AcceptRule, notes: list[ParseNote]
) -> tuple[Level | None, list[Item]]:
    """Index one document level and make its top-level pairs (a note when blocks nest past
    ``PAIRING_NESTING_LIMIT``). The level is ``None`` when it has no closing tag and no
    ``{{else}}`` (nothing to pair or split)."""
    for item in items:
        if item.__class__ is Macro and (item.closing or item.lname == "else"):
            break
    else:  # nothing to pair or split: the items are their own pairing
        return None, items
    level = Level(src, items, can_accept)
    if level.relevant and level.too_deep(depth):
        notes.append(ParseNote(MACRO_PARSE_FAILED, 0, "blocks nested too deeply"))
    return level, level.pair(0, len(items), depth)


def _stray(item: Item) -> Item:
    macro: Macro = item  # type: ignore[assignment]
    return RawMacro(macro.raw, macro.start, macro.lname, MACRO_UNMATCHED_CLOSING_BLOCK)


def pair_items(src: str, items: list[Item], can_accept: AcceptRule) -> list[Item]:
    """Pair scoped blocks in a list of items cut from ``src`` (as a branch is paired)."""
    return Level(src, items, can_accept).pair(0, len(items), 1)
