"""World info recursion, inclusion groups, timed effects across turns, and positions."""

from __future__ import annotations

from engine.formats.worldbook import (
    POS_AFTER,
    POS_AN_BOTTOM,
    POS_AN_TOP,
    POS_AT_DEPTH,
    POS_BEFORE,
    POS_EM_BOTTOM,
    POS_EM_TOP,
    POS_OUTLET,
)
from engine.prompt.wi_sources import WorldInfoSettings
from engine.prompt.wi_timed import TimedState
from engine.prompt.worldinfo import MAX_SCAN_PASSES
from tests.test_worldinfo.helpers import book, entry, scan, uids

RECURSIVE = WorldInfoSettings(recursive=True)


def test_recursion_follows_activated_content() -> None:
    b = book(entry(1, "dragon", content="the dragon guards the ruby"), entry(2, "ruby"))
    assert uids(scan(b, ["a dragon"])) == {1}
    assert uids(scan(b, ["a dragon"], settings=RECURSIVE)) == {1, 2}


def test_prevent_and_exclude_recursion() -> None:
    stop = book(entry(1, "dragon", content="ruby", prevent_recursion=True), entry(2, "ruby"))
    assert uids(scan(stop, ["dragon"], settings=RECURSIVE)) == {1}
    excluded = book(entry(1, "dragon", content="ruby"), entry(2, "ruby", exclude_recursion=True))
    assert uids(scan(excluded, ["dragon"], settings=RECURSIVE)) == {1}
    assert uids(scan(excluded, ["dragon ruby"], settings=RECURSIVE)) == {1, 2}


def test_delay_until_recursion_levels() -> None:
    b = book(
        entry(1, "dragon", content="ruby"),
        entry(2, "ruby", delay_until_recursion=1, content="gold"),
        entry(3, "dragon", delay_until_recursion=2),
    )
    # Entry 2 matches the chat directly but waits for a recursion pass; 3 waits for level 2.
    assert uids(scan(book(b.entries[1]), ["ruby"])) == set()
    result = scan(b, ["dragon ruby"], settings=RECURSIVE)
    assert uids(result) == {1, 2, 3} and result.passes >= 3


def test_max_recursion_steps_and_pass_limit() -> None:
    chain = book(*[entry(i, f"k{i}", content=f"k{i + 1}") for i in range(6)])
    capped = WorldInfoSettings(recursive=True, max_recursion_steps=2)
    assert uids(scan(chain, ["k0"], settings=capped)) == {0, 1}
    assert uids(scan(chain, ["k0"], settings=RECURSIVE)) == set(range(6))
    assert MAX_SCAN_PASSES >= 100


def test_inclusion_group_activates_one_member() -> None:
    b = book(*[entry(i, "go", group="g") for i in range(5)])
    results = {frozenset(uids(scan(b, ["go"], seed=s))) for s in range(20)}
    assert all(len(r) == 1 for r in results) and len(results) > 1


def test_group_weights_and_override() -> None:
    weighted = book(entry(1, "go", group="g", group_weight=0), entry(2, "go", group="g"))
    assert all(uids(scan(weighted, ["go"], seed=s)) == {2} for s in range(10))
    prio = book(
        entry(1, "go", group="g", group_override=True, order=10),
        entry(2, "go", group="g", group_override=True, order=90),
        entry(3, "go", group="g", order=500),
    )
    assert uids(scan(prio, ["go"])) == {2}


def test_group_scoring_prefers_more_matching_keys() -> None:
    b = book(entry(1, "go", group="g"), entry(2, "go", "run", group="g"))
    scoring = WorldInfoSettings(use_group_scoring=True)
    assert all(uids(scan(b, ["go run"], seed=s, settings=scoring)) == {2} for s in range(10))


def test_entry_in_several_groups_and_already_activated_group() -> None:
    b = book(
        entry(1, "go", group="a, b", group_override=True),
        entry(2, "go", group="b"),
        entry(3, "go", group="a"),
    )
    assert uids(scan(b, ["go"])) == {1}
    rec = book(entry(1, "go", group="g", content="more"), entry(2, "more", group="g"))
    assert uids(scan(rec, ["go"], settings=RECURSIVE)) == {1}


def _turns(b, lines_per_turn, **kw):  # type: ignore[no-untyped-def]
    """Scan once per chat length, persisting the timed state like a branch would."""
    state = TimedState()
    seen = []
    chat: list[str] = []
    for line in lines_per_turn:
        chat.append(line)
        result = scan(b, chat, timed_state=state, **kw)
        state = TimedState.from_json(result.timed_state.to_json())
        seen.append(uids(result))
    return seen, state


def test_sticky_keeps_an_entry_after_its_key_left() -> None:
    b = book(entry(1, "dragon", sticky=3))
    seen, _ = _turns(b, ["dragon", "a", "b", "c", "d", "e"])
    # Active on the activating message and while chat length < start + 3.
    assert seen == [{1}, {1}, {1}, set(), set(), set()]


def test_cooldown_blocks_reactivation() -> None:
    b = book(entry(1, "dragon", cooldown=2))
    seen, _ = _turns(b, ["dragon", "dragon", "dragon", "dragon"])
    assert seen == [{1}, set(), {1}, set()]


def test_sticky_then_protected_cooldown() -> None:
    b = book(entry(1, "dragon", sticky=2, cooldown=2))
    seen, state = _turns(b, ["dragon", "dragon", "dragon", "dragon", "dragon", "dragon"])
    # Sticky for lengths 1-2, then a cooldown of 2 starts when it ends (lengths 3-4).
    assert seen == [{1}, {1}, set(), set(), {1}, {1}]
    assert "B.1" in state.sticky


def test_delay_suppresses_until_chat_is_long_enough() -> None:
    b = book(entry(1, "dragon", delay=3))
    seen, _ = _turns(b, ["dragon", "dragon", "dragon"])
    assert seen == [set(), set(), {1}]


def test_regenerate_at_same_length_redoes_sticky() -> None:
    b = book(entry(1, "dragon", sticky=5))
    first = scan(b, ["dragon"])
    again = scan(b, ["plain"], timed_state=first.timed_state)
    assert uids(again) == set() and "B.1" not in again.timed_state.sticky


def test_editing_an_entry_ends_its_effect() -> None:
    first = scan(book(entry(1, "dragon", sticky=5)), ["dragon"])
    edited = book(entry(1, "dragon", sticky=5, content="changed"))
    kept = scan(
        book(entry(1, "dragon", sticky=5)), ["dragon", "x", "y"], timed_state=first.timed_state
    )
    assert uids(kept) == {1}
    assert uids(scan(edited, ["dragon", "x", "y"], timed_state=first.timed_state)) == set()


def test_dry_run_leaves_state_unchanged() -> None:
    state = TimedState()
    result = scan(book(entry(1, "dragon", sticky=5)), ["dragon"], dry_run=True, timed_state=state)
    assert uids(result) == {1} and result.timed_state == state


def test_positions_and_their_order() -> None:
    b = book(
        entry(1, constant=True, position=POS_BEFORE, order=20),
        entry(2, constant=True, position=POS_BEFORE, order=10),
        entry(3, constant=True, position=POS_AFTER),
        entry(4, constant=True, position=POS_AN_TOP),
        entry(5, constant=True, position=POS_AN_BOTTOM),
        entry(6, constant=True, position=POS_EM_TOP),
        entry(7, constant=True, position=POS_EM_BOTTOM),
        entry(8, constant=True, position=POS_AT_DEPTH, depth=2, role=1, order=5),
        entry(9, constant=True, position=POS_AT_DEPTH, depth=2, role=1, order=1),
        entry(10, constant=True, position=POS_AT_DEPTH, depth=0),
        entry(11, constant=True, position=POS_OUTLET, outlet_name="inv", order=1),
        entry(12, constant=True, position=POS_OUTLET, outlet_name="inv", order=9),
        entry(13, constant=True, position=POS_OUTLET),
    )
    r = scan(b, ["x"])
    assert r.before_text == "E2\nE1" and r.after_text == "E3"
    assert [e.uid for e in r.an_top] == [4] and [e.uid for e in r.an_bottom] == [5]
    assert [e.uid for e in r.em_top] == [6] and [e.uid for e in r.em_bottom] == [7]
    assert [(d.depth, d.role, d.content) for d in r.depth] == [(0, 0, "E10"), (2, 1, "E9\nE8")]
    assert r.outlet_texts() == {"inv": "E12\nE11"}
    orders = [e.order for e in r.activated]
    assert orders == sorted(orders, reverse=True)


def test_content_goes_through_macros_and_regex() -> None:
    from engine.prompt.wi_sources import BookSource, ListWindow
    from engine.prompt.worldinfo import WorldInfoRequest, scan_world_info

    b = book(entry(1, "{{char}}", content="{{char}} rules", position=POS_AT_DEPTH, depth=3))
    depths: list[int | None] = []

    def regex(text: str, depth: int | None) -> str:
        depths.append(depth)
        return text.upper()

    request = WorldInfoRequest(books=[BookSource(book=b)], window=ListWindow(["hi Ann"]))
    result = scan_world_info(
        request, render=lambda t, _s: t.replace("{{char}}", "Ann"), regex=regex
    )
    assert result.depth[0].content == "ANN RULES" and depths == [3]
