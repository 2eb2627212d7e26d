"""One turn's total budget for regex work (issue 12): scripts and world-info regex keys draw on
one :class:`RegexBudget`; once it is spent the rest are skipped with one warning, and matching
releases the GIL so that a worker thread's backtracking does not starve other threads."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

from engine.formats.cards import CharacterCard
from engine.formats.preset import Preset
from engine.formats.regex_scripts import RegexScript
from engine.formats.worldbook import WorldBook, WorldEntry
from engine.prompt.assemble import assemble
from engine.prompt.inputs import (
    PLACEMENT_AI_OUTPUT,
    PLACEMENT_USER_INPUT,
    AssemblyInput,
    CharacterFields,
    HistoryLine,
    ListHistory,
)
from engine.prompt.jsregex import compile_js, js_replace, parse_script_regex
from engine.prompt.regex_budget import EXHAUSTED, TURN_REGEX_BUDGET_S, RegexBudget
from engine.prompt.regex_run import REGEX_TIMEOUT_S, apply_scripts, run_script
from engine.prompt.wi_regex import key_regex_matches
from engine.prompt.wi_sources import BookSource, ListWindow
from engine.prompt.worldinfo import WorldInfoRequest, scan_world_info

EVIL = "/(a|aa)+$/"
ATTACK_TEXT = "a" * 60 + "!"


def evil_script(number: int, **flags: object) -> RegexScript:
    return RegexScript(
        id=f"s{number}",
        script_name=f"evil {number}",
        find_regex=EVIL,
        replace_string="X",
        placement=(PLACEMENT_USER_INPUT, PLACEMENT_AI_OUTPUT),
        **flags,  # type: ignore[arg-type]
    )


def stepping_clock(step: float) -> Callable[[], float]:
    """A clock that moves ``step`` seconds each time it is read (deterministic charges)."""
    now = [0.0]

    def read() -> float:
        now[0] += step
        return now[0]

    return read


def test_scripts_past_the_budget_are_skipped_with_one_warning() -> None:
    # Every script is charged 1 s by the stepping clock: two fit in 2 s, the other 22 are
    # skipped without running, whatever the machine's speed.
    budget = RegexBudget(2.0, clock=stepping_clock(1.0))
    scripts = [evil_script(i) for i in range(24)]
    run = apply_scripts(
        ATTACK_TEXT, scripts, placement=PLACEMENT_USER_INPUT, channel="store", budget=budget
    )
    assert run.text == ATTACK_TEXT
    # the two that ran hit their own per-call limit (the budget had more than it left)
    assert [w.code for w in run.warnings] == ["timeout", "timeout"]
    assert budget.exhausted and budget.skipped == 22
    warning = budget.warning()
    assert warning is not None and warning.startswith(EXHAUSTED)
    assert "TURN_REGEX_BUDGET_S=2.0s" in warning and "so 22 script runs were skipped" in warning
    assert "script 'evil 2'" in warning and "..." in warning  # named, then cut short


def test_a_script_cut_short_by_the_budget_is_a_budget_skip_not_a_timeout() -> None:
    budget = RegexBudget(REGEX_TIMEOUT_S / 5)  # less than one script's own limit
    run = run_script(evil_script(1), ATTACK_TEXT, budget=budget)
    assert run.text == ATTACK_TEXT and run.warnings == ()
    assert budget.skipped == 1 and budget.exhausted


def test_cheap_scripts_are_untouched_by_the_budget() -> None:
    budget = RegexBudget()
    script = RegexScript(
        id="ok",
        script_name="ok",
        find_regex="/a/g",
        replace_string="b",
        placement=(PLACEMENT_USER_INPUT,),
    )
    assert (
        apply_scripts(
            "aaa", [script] * 50, placement=PLACEMENT_USER_INPUT, channel="store", budget=budget
        ).text
        == "bbb"
    )
    assert budget.warning() is None and not budget.exhausted


def test_world_info_keys_past_the_budget_do_not_match() -> None:
    book = WorldBook(
        name="trap",
        entries=tuple(
            WorldEntry(uid=i, keys=(f"/(a|aa)+(z{i})?$/",), content=f"entry {i}")
            for i in range(200)
        )
        + (WorldEntry(uid=999, keys=("/^a/",), content="cheap"),),
    )
    budget = RegexBudget(1.0, clock=stepping_clock(0.5))  # 0.5 s charged per key test
    request = WorldInfoRequest(
        books=[BookSource(book=book, kind="chat")],
        window=ListWindow([ATTACK_TEXT]),
    )
    result = scan_world_info(request, regex_budget=budget)
    assert result.activated == ()  # even the cheap key: the budget was spent before its turn
    assert budget.skipped == 199
    warning = budget.warning()
    assert warning is not None and "so 199 world-info key tests were skipped" in warning
    assert "world-info key /(a|aa)+(z2)?$/" in warning


def test_assembly_stops_at_the_named_turn_limit_and_says_so() -> None:
    """The real limit: 24 backtracking scripts on a chat line and 40 backtracking world-info
    keys would take 24 x REGEX_TIMEOUT_S + 40 x 0.1 s; the assembly gives up at
    TURN_REGEX_BUDGET_S and the prompt's warnings say so once."""
    scripts = [evil_script(i, prompt_only=True) for i in range(24)]
    book = WorldBook(
        name="trap",
        entries=tuple(
            WorldEntry(uid=i, keys=(f"/(a|aa)+(z{i})?$/",), content="x") for i in range(40)
        ),
    )
    assert 24 * REGEX_TIMEOUT_S + 40 * 0.1 > TURN_REGEX_BUDGET_S
    card = CharacterCard(name="Trap")
    inp = AssemblyInput(
        preset=Preset(source="test"),
        character=CharacterFields.from_card(card),
        history=ListHistory([HistoryLine(text=ATTACK_TEXT, is_user=True, name="User")]),
        user_name="User",
        user_input=ATTACK_TEXT,
        books=[BookSource(book=book, kind="chat")],
    )
    budget = RegexBudget()
    result = assemble(inp, scripts=scripts, regex_budget=budget)
    assert budget.total_s == TURN_REGEX_BUDGET_S and budget.exhausted and budget.skipped > 0
    exhausted = [w for w in result.ir.warnings if w.startswith(EXHAUSTED)]
    assert len(exhausted) == 1 and "TURN_REGEX_BUDGET_S" in exhausted[0]
    assert (
        " script runs and " in exhausted[0]
        and " world-info key tests were skipped" in exhausted[0]
    )


def _progress_during(work: Callable[[], object]) -> int:
    """How many times this thread got to run Python while ``work`` ran in another thread.

    A long switch interval means a thread holding the GIL keeps it (for the worker, until its
    match releases it), so the count does not depend on where a forced switch happens."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.5)
    try:
        return _count_progress(work)
    finally:
        sys.setswitchinterval(interval)


def _count_progress(work: Callable[[], object]) -> int:
    progress = [0]
    during: list[int] = []
    started = threading.Event()

    def worker() -> None:
        started.set()
        before = progress[0]
        work()
        during.append(progress[0] - before)

    thread = threading.Thread(target=worker)
    thread.start()
    started.wait()
    while thread.is_alive():
        progress[0] += 1
    thread.join()
    return during[0]


# The installed ``regex`` releases the GIL for str subjects by default; the engine asks for it
# explicitly (``concurrent=True``) and these tests fail when a match holds it.


def test_a_key_test_releases_the_gil_while_it_backtracks() -> None:
    compiled = compile_js("(a|aa)+$")
    assert _progress_during(lambda: key_regex_matches(compiled, ATTACK_TEXT, timeout_s=0.3)) > 0


def test_a_script_match_releases_the_gil_while_it_backtracks() -> None:
    compiled = parse_script_regex(EVIL)
    assert compiled is not None

    def replace() -> object:
        try:
            return js_replace(compiled, ATTACK_TEXT, lambda m: "X", timeout_s=REGEX_TIMEOUT_S)
        except TimeoutError:
            return None

    assert _progress_during(replace) > 0
