"""Blocks nested thousands of levels deep: the right warnings, the unreached part kept as
written, and work and memory that grow linearly with the text (issue 12).

No test here reads a clock: cost is measured by counting the pairing decisions the engine
makes (calls of the registry's ``can_accept``) and by the peak memory ``tracemalloc`` sees,
both of which are deterministic.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.macros import MacroContext, evaluate
from engine.macros import parser as parser_module
from engine.macros.cache import TemplateCache
from engine.macros.limits import DEFAULT_MAX_DEPTH, PAIRING_NESTING_LIMIT
from engine.macros.nodes import Item, Macro, RawMacro, Scoped, VarExpr
from engine.macros.parser import Parser
from engine.macros.processing import postprocess
from engine.macros.registry import Registry, default_registry
from tests.test_macros.util import codes


def _wrap(opener: str, closer: str) -> Callable[[int], str]:
    return lambda n: opener * n + "x" + closer * n


#: Documents nested ``n`` levels deep, by name: each is ``opener * n + "x" + closer * n``.
FORMS: dict[str, Callable[[int], str]] = {
    "inline if": _wrap("{{if::1}}", "{{/if}}"),
    "block if": _wrap("{{if 1}}", "{{/if}}"),
    "if with else": _wrap("{{if 1}}", "{{else}}y{{/if}}"),
    "false if with else": _wrap("{{if 0}}", "{{else}}y{{/if}}"),
    "indented if": _wrap("{{if 1}}\n  ", "\n{{/if}}"),
    "trim": _wrap("{{trim}}", "{{/trim}}"),
    "unknown block": _wrap("{{foo}}", "{{/foo}}"),
    "if and trim": _wrap("{{if 1}}{{trim}}", "{{/trim}}{{/if}}"),
}
DEEP = 8_000


def _context() -> MacroContext:
    return MacroContext(user="Alice", char="Bob")


def _fresh(text: str, registry: Registry | None = None) -> Any:
    """Evaluate with an empty template cache, so parsing is part of what is measured."""
    return evaluate(text, _context(), registry=registry, cache=TemplateCache())


def test_an_empty_template_cache_given_to_evaluate_is_the_one_used() -> None:
    cache = TemplateCache()  # empty, hence falsy: it must not be swapped for the default
    evaluate("{{user}} and {{char}}", _context(), cache=cache)
    assert len(cache) == 1 and cache.misses == 1


@pytest.mark.parametrize("form", ["inline if", "block if", "if with else", "trim", "if and trim"])
def test_deep_nesting_warns_and_keeps_the_unreached_levels_as_written(form: str) -> None:
    build = FORMS[form]
    result = _fresh(build(DEEP))
    found = set(codes(result))
    assert "macro_depth_limit_exceeded" in found  # evaluation stopped at max_depth
    assert "macro_parse_failed" in found  # "blocks nested too deeply" (pairing limit)
    # The levels evaluation reached are gone; the rest is as written (then post-processed
    # like any output: a legacy ``{{trim}}`` marker left in it is deleted). In the compound
    # form evaluation may stop between the ``{{if}}`` and the ``{{trim}}`` of a level.
    # Each level reached costs one or two units of max_depth.
    reached = any(
        result.text == postprocess(unreached)
        for n in range(DEFAULT_MAX_DEPTH // 2 - 1, DEFAULT_MAX_DEPTH + 2)
        for unreached in (build(DEEP - n), "{{trim}}" + build(DEEP - n) + "{{/trim}}")
    )
    assert reached, result.text[:200]


def test_a_false_deep_chain_takes_its_outermost_else() -> None:
    result = _fresh(FORMS["false if with else"](DEEP))
    assert result.text == "y"
    assert "macro_parse_failed" in codes(result)


def test_an_unknown_deep_block_is_kept_whole() -> None:
    text = FORMS["unknown block"](DEEP)
    result = _fresh(text)
    assert result.text == text
    assert {"macro_unknown", "macro_depth_limit_exceeded"} <= set(codes(result))


def _counting_registry() -> tuple[Registry, list[int]]:
    """A copy of the default registry that counts its pairing decisions."""
    registry = default_registry().copy()
    calls = [0]
    accept = registry.can_accept

    def counted(name: str, inline_args: int) -> bool:
        calls[0] += 1
        return accept(name, inline_args)

    registry.can_accept = counted  # type: ignore[method-assign]
    return registry, calls


@pytest.mark.parametrize("form", ["block if", "if with else", "trim", "if and trim"])
def test_pairing_work_is_linear_in_the_nesting_depth(form: str) -> None:
    build = FORMS[form]
    work: dict[int, int] = {}
    for depth in (1_000, 2_000, 4_000):
        registry, calls = _counting_registry()
        _fresh(build(depth), registry)
        work[depth] = calls[0]
        # About one decision per opener: the text is paired once, not once per level reached.
        assert work[depth] <= 4 * depth * 2
    assert work[4_000] <= 4.5 * work[1_000]


def _peak_bytes(text: str) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        _fresh(text)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("form", ["block if", "if with else"])
def test_memory_is_linear_in_the_nesting_depth(form: str) -> None:
    build = FORMS[form]
    small = _peak_bytes(build(1_000))
    # 128 KB of text: a few hundred bytes per level at most (it took 1.4 GB).
    assert small < 8_000_000
    large = _peak_bytes(build(DEEP))
    assert large < 48_000_000
    assert large < 12 * small  # 8x the text, about 8x the memory


# -- pairing agrees with the rule as SillyTavern states it -----------------------------------


def _reference(items: list[Item], depth: int, accept: Callable[[str, int], bool]) -> list[Any]:
    """The pairing rule written the obvious (quadratic) way: for each opener in order, outside
    pairs already made, the first same-name closer at depth 0 is its partner, where depth
    counts same-name openers that could take content."""
    if not any(isinstance(it, Macro) and it.closing for it in items):
        return [_leaf(it) for it in items]
    if depth >= PAIRING_NESTING_LIMIT:
        return [_closer(it, True) if _is_closer(it) else _leaf(it) for it in items]
    out: list[Any] = []
    raw_closers: set[int] = set()
    k = 0
    while k < len(items):
        item = items[k]
        if not isinstance(item, Macro):
            out.append(_leaf(item))
        elif item.closing:
            out.append(_closer(item, k not in raw_closers))
        else:
            j = _partner(items, k, accept)
            if j < 0:
                out.append(_leaf(item))
            elif not accept(item.lname, item.arg_count):
                out.append(("raw", item.raw, "macro_arg_arity_invalid"))
                raw_closers.add(j)
            else:
                inner = _reference(items[k + 1 : j], depth + 1, accept)
                out.append(("scoped", item.start, items[j].end, inner))  # type: ignore[union-attr]
                k = j
        k += 1
    return out


def _partner(items: list[Item], k: int, accept: Callable[[str, int], bool]) -> int:
    name = items[k].lname  # type: ignore[union-attr]
    depth = 0
    for j in range(k + 1, len(items)):
        other = items[j]
        if not isinstance(other, Macro) or other.lname != name:
            continue
        if other.closing:
            if depth == 0:
                return j
            depth -= 1
        elif accept(name, other.arg_count):
            depth += 1
    return -1


def _is_closer(item: Item) -> bool:
    return isinstance(item, Macro) and item.closing


def _closer(item: Item, stray: bool) -> Any:
    macro: Macro = item  # type: ignore[assignment]
    return ("raw", macro.raw, "macro_unmatched_closing_block" if stray else None)


def _leaf(item: Item) -> Any:
    if isinstance(item, str):
        return item
    if isinstance(item, Macro | VarExpr):
        return ("node", item.start, item.end)
    raise AssertionError(f"unexpected unpaired item {item!r}")


def _shape(items: list[Item]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if isinstance(item, Scoped):
            out.append(("scoped", item.start, item.end, _shape(item.content.items)))
        elif isinstance(item, RawMacro):
            out.append(("raw", item.text, item.code))
        else:
            out.append(_leaf(item))
    return out


@contextmanager
def _capture_top_level() -> Iterator[list[list[Item]]]:
    """Record the unpaired items the parser hands to pairing for the whole text."""
    seen: list[list[Item]] = []
    original = parser_module.pair_level

    def spy(src: str, items: list[Item], depth: int, *rest: Any) -> Any:
        if depth == 0:
            seen.append(list(items))
        return original(src, items, depth, *rest)

    parser_module.pair_level = spy  # type: ignore[assignment]
    try:
        yield seen
    finally:
        parser_module.pair_level = original


PIECES = st.sampled_from(
    [
        "{{if 1}}",
        "{{if}}",
        "{{IF 1}}",
        "{{/if}}",
        "{{/IF}}",
        "{{else}}",
        "{{trim}}",
        "{{/trim}}",
        "{{foo}}",
        "{{/foo}}",
        "{{foo::a::b}}",
        "{{user}}",
        "{{/user}}",
        "{{.x}}",
        "x",
        " ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=40).map("".join))
def test_linear_pairing_matches_the_stated_rule(source: str) -> None:
    accept = default_registry().can_accept
    with _capture_top_level() as seen:
        paired = Parser(source, accept).parse()
    if not seen:  # no macro syntax: the text is its only item
        assert paired == ([source] if source else [])
        return
    assert _shape(paired) == _reference(seen[0], 0, accept)


def test_pairing_past_the_nesting_limit_matches_the_stated_rule() -> None:
    accept = default_registry().can_accept
    source = "{{foo}}{{trim}}" * PAIRING_NESTING_LIMIT + "{{/foo}}x{{/trim}}{{/foo}}" * 3
    with _capture_top_level() as seen:
        paired = Parser(source, accept).parse()
    assert _shape(paired) == _reference(seen[0], 0, accept)
