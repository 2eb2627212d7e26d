"""Scoped-block pairing: ``{{name}}...{{/name}}`` at each document level, as SillyTavern's walker
does it.

For each opener (in order, outside pairs already made) the first unused closing tag of the
same name at depth 0 is its partner; depth counts same-name openers that could take content.
An opener that cannot take content leaves both tags raw; a closing tag without an opener stays
raw with ``macro_unmatched_closing_block``; an opener without a closer is evaluated inline.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable

from engine.macros.diagnostics import (
    MACRO_ARG_ARITY_INVALID,
    MACRO_PARSE_FAILED,
    MACRO_UNMATCHED_CLOSING_BLOCK,
)
from engine.macros.limits import PAIRING_NESTING_LIMIT, PAIRING_SCAN_LIMIT
from engine.macros.nodes import Arg, Item, Macro, ParseNote, RawMacro, Scoped

#: ``can_accept(lower_name, inline_arg_count)``: may this opener take scoped content?
AcceptRule = Callable[[str, int], bool]


def pair_level(
    src: str, items: list[Item], depth: int, can_accept: AcceptRule, notes: list[ParseNote]
) -> list[Item]:
    """Match ``{{name}}…{{/name}}`` pairs at one level; contents are paired recursively."""
    has_closer = False
    for item in items:
        if item.__class__ is Macro and item.closing:
            has_closer = True
            break
    if not has_closer:
        return items
    if depth >= PAIRING_NESTING_LIMIT:
        notes.append(ParseNote(MACRO_PARSE_FAILED, 0, "blocks nested too deeply"))
        return [_stray(it) if it.__class__ is Macro and it.closing else it for it in items]
    # Only macros whose name has a closing tag at this level take part in pairing; the
    # items between them are copied in slices (a long document stays linear).
    by_name: dict[str, list[int]] = {}
    closer_names: set[str] = set()
    for index, it in enumerate(items):
        if it.__class__ is Macro:
            name = it.lname
            found = by_name.get(name)
            if found is None:
                by_name[name] = [index]
            else:
                found.append(index)
            if it.closing:
                closer_names.add(name)
    positions = {name: by_name[name] for name in closer_names}
    relevant = sorted(index for name in closer_names for index in by_name[name])
    budget = [PAIRING_SCAN_LIMIT]
    exhausted = False
    out: list[Item] = []
    raw_closers: set[int] = set()
    used: set[int] = set()
    last = 0
    for k in relevant:
        if k < last:
            continue  # inside a pair already made
        macro: Macro = items[k]  # type: ignore[assignment]
        if macro.closing:
            if k in used:
                continue
            out.extend(items[last:k])
            if k in raw_closers:
                out.append(RawMacro(macro.raw, macro.start, macro.lname, None))
            else:
                out.append(_stray(macro))
            last = k + 1
            continue
        j = _find_closer(items, k, positions[macro.lname], used, can_accept, budget)
        if j < 0:  # an unmatched opener is evaluated inline
            if budget[0] < 0 and not exhausted:
                exhausted = True
                notes.append(
                    ParseNote(MACRO_PARSE_FAILED, macro.start, "too many unclosed blocks to pair")
                )
            continue
        out.extend(items[last:k])
        if not can_accept(macro.lname, macro.arg_count):
            out.append(RawMacro(macro.raw, macro.start, macro.lname, MACRO_ARG_ARITY_INVALID))
            raw_closers.add(j)
            last = k + 1
            continue
        closer: Macro = items[j]  # type: ignore[assignment]
        inner = items[k + 1 : j]
        content = Arg(
            src[macro.end : closer.start],
            macro.end,
            closer.start,
            pair_level(src, inner, depth + 1, can_accept, notes),
            inner,
        )
        out.append(Scoped(src, macro, content, closer.start, closer.end))
        used.add(j)
        last = j + 1
    out.extend(items[last:])
    return out


def _find_closer(
    items: list[Item],
    i: int,
    same: list[int],
    used: set[int],
    can_accept: AcceptRule,
    budget: list[int],
) -> int:
    """The index of the closing tag that pairs with the opener at ``i`` (or -1); ``budget``
    bounds the total scanning of one level (hostile text cannot make pairing quadratic)."""
    name = items[i].lname  # type: ignore[union-attr]
    depth = 0
    for index in range(bisect_right(same, i), len(same)):
        budget[0] -= 1
        if budget[0] < 0:
            return -1
        k = same[index]
        other: Macro = items[k]  # type: ignore[assignment]
        if other.closing:
            if k in used:
                continue
            if depth == 0:
                return k
            depth -= 1
        elif can_accept(name, other.arg_count):
            depth += 1
    return -1


def _stray(item: Item) -> Item:
    macro: Macro = item  # type: ignore[assignment]
    return RawMacro(macro.raw, macro.start, macro.lname, MACRO_UNMATCHED_CLOSING_BLOCK)


def pair_items(src: str, items: list[Item], can_accept: AcceptRule) -> list[Item]:
    """Pair scoped blocks in a list of items cut from ``src`` (an ``{{if}}`` branch)."""
    return pair_level(src, items, 1, can_accept, [])
