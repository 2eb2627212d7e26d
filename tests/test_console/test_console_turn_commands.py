"""The console's turn commands on the real engine (offline model): ``/history`` with both
sides, ``/edit``, ``/del``, ``/continue``, ``/impersonate``, ``/greeting``, ``/dryrun``,
``/tokens``, ``/stop``, ``/swipe`` at the ends, and the hints for lines that only look like
commands."""

from __future__ import annotations

import io
import json

import pytest

from adapters.console.frontend import ConsoleFrontend
from adapters.console.turn_commands import (
    GREETINGS_LOCKED,
    HISTORY_FLOORS,
    NOTHING_GENERATING,
    command_hint,
    spaced_command_hint,
)
from engine.turns.api import MAIN_BRANCH, SessionKey
from engine.turns.service import TavernService

pytestmark = pytest.mark.timeout(60)
KEY = SessionKey(platform="console", realm="local", key="turns")


async def _console(
    service: TavernService, *, jsonl: bool = False
) -> tuple[ConsoleFrontend, io.StringIO]:
    await service.open_session(KEY)
    out = io.StringIO()
    return ConsoleFrontend(service=service, key=KEY, user="Ann", out=out, jsonl=jsonl), out


async def _play(console: ConsoleFrontend, out: io.StringIO, *lines: str) -> str:
    """What the console prints for ``lines``."""
    start = len(out.getvalue())
    for line in lines:
        assert await console.handle_line(line)
    return out.getvalue()[start:]


async def test_history_shows_both_sides_and_says_when_empty(offline_engine: TavernService) -> None:
    console, out = await _console(offline_engine)
    assert await _play(console, out, "/history") == "* no floors yet on branch main\n"
    await _play(console, out, "hello there", "second line", "/regen")
    shown = (await _play(console, out, "/history")).splitlines()
    assert shown[0] == "#1 Ann: hello there"
    assert shown[1].startswith("   Narrator ‹1/1›: ") and "hello there" in shown[1]
    assert shown[2] == "#2 Ann: second line"
    assert shown[3].startswith("   Narrator ‹2/2›: ")
    last = (await _play(console, out, "/history 1")).splitlines()
    assert last[0] == "#2 Ann: second line" and len(last) == 2
    assert (await _play(console, out, "/history x")).startswith("! usage: /history [N]")
    assert HISTORY_FLOORS == 20


async def test_history_in_jsonl_keeps_its_message_and_adds_both_sides(
    offline_engine: TavernService,
) -> None:
    console, out = await _console(offline_engine, jsonl=True)
    rows = [json.loads(r) for r in (await _play(console, out, "hi", "/history")).splitlines()]
    floor = rows[-1]
    assert floor["message"].startswith("#1 ‹1/1› ")
    assert floor["inputs"] == [{"speaker": "Ann", "text": "hi"}]
    assert (floor["character"], floor["failed"], floor["error"]) == ("Narrator", False, None)


async def test_hints_never_reach_the_character(offline_engine: TavernService) -> None:
    console, out = await _console(offline_engine)
    said = await _play(console, out, "  /regen", "/regn", "/zzzzzz")
    assert said.splitlines() == [
        "* did you mean /regen? (a line starting with a space before / is not a command; "
        "nothing was sent)",
        "! unknown command /regn; did you mean /regen? (/help lists the commands)",
        "! unknown command /zzzzzz (/help lists the commands)",
    ]
    assert await offline_engine.history(KEY, MAIN_BRANCH) == []
    # A line starting with // or \/ is a message that starts with a slash.
    await _play(console, out, "//shrug", "\\/me waves")
    inputs = [v.inputs for v in await offline_engine.history(KEY, MAIN_BRANCH)]
    assert inputs == [(("Ann", "/shrug"),), (("Ann", "/me waves"),)]


def test_hint_helpers() -> None:
    help_text = "commands: /regen, /swipe < | >, /history [N]"
    assert spaced_command_hint("hello /regen", help_text) is None
    assert spaced_command_hint("/regen", help_text) is None
    assert spaced_command_hint("   /histroy", help_text) == (
        "did you mean /history? (a line starting with a space before / is not a command; "
        "nothing was sent)"
    )
    assert command_hint("/SWIPEE", help_text) == (
        "unknown command /SWIPEE; did you mean /swipe? (/help lists the commands)"
    )


async def test_swipe_at_either_end_says_so(offline_engine: TavernService) -> None:
    console, out = await _console(offline_engine)
    await _play(console, out, "hello")
    assert await _play(console, out, "/swipe <") == "* already on the first page (1/1)\n"
    last = (await _play(console, out, "/swipe >")).splitlines()
    assert last[-1] == "* that is the last page (1/1); /regen writes another"
    await _play(console, out, "/regen")
    assert (await _play(console, out, "/swipe <")).splitlines()[-1].endswith("[main #1]")


async def test_edit_your_message_goes_to_a_new_branch(offline_engine: TavernService) -> None:
    console, out = await _console(offline_engine)
    await _play(console, out, "first", "second")
    said = await _play(console, out, "/edit second, but kinder")
    assert said.splitlines()[-1] == (
        "* edited floor 2 on a new branch: now on main-edit-2 (the original stays on main)"
    )
    assert console.branch == "main-edit-2"
    edited = await offline_engine.history(KEY, "main-edit-2")
    assert [v.inputs[0][1] for v in edited] == ["first", "second, but kinder"]
    original = await offline_engine.history(KEY, MAIN_BRANCH)
    assert original[-1].inputs == (("Ann", "second"),)


async def test_edit_a_reply_keeps_the_original_as_a_page(offline_engine: TavernService) -> None:
    console, out = await _console(offline_engine)
    await _play(console, out, "first", "second")
    said = (await _play(console, out, "/edit 2 She nods, it's fine.")).splitlines()
    assert said[0] == "She nods, it's fine."  # typed as is: the apostrophe is kept
    assert said[-1] == (
        "* the reply of floor 2 is now page 2/2; the original stays a page before it (/swipe <)"
    )
    assert len(await offline_engine.page_texts(KEY, MAIN_BRANCH, 2)) == 2
    older = await _play(console, out, "/edit 1 no")
    assert older == (
        "! only the latest floor's reply can be edited (floor 2 on branch 'main'; floor 1 is "
        "older)\n"
    )
    assert (await _play(console, out, "/edit")).startswith("! usage: /edit TEXT")
    assert await _play(console, out, "/edit 7 no") == (
        "! branch 'main' has no floor 7 (its latest is floor 2)\n"
    )


async def test_del_hides_a_floor(offline_engine: TavernService) -> None:
    console, out = await _console(offline_engine)
    await _play(console, out, "first", "second", "third")
    assert await _play(console, out, "/del 2") == (
        "* floor 2 hidden: kept (/history marks it), left out of the prompts\n"
    )
    assert await _play(console, out, "/del") == (
        "* floor 3 hidden: kept (/history marks it), left out of the prompts\n"
    )
    assert [v.floor for v in await offline_engine.history(KEY, MAIN_BRANCH)] == [1]
    marked = await offline_engine.history(KEY, MAIN_BRANCH, include_hidden=True)
    assert [(v.floor, v.hidden) for v in marked] == [(1, False), (2, True), (3, True)]
    shown = (await _play(console, out, "/history")).splitlines()
    assert shown[0].startswith("#1 Ann: first") and "‹hidden›" not in shown[0]
    assert shown[2] == "#2 Ann: second ‹hidden›" and shown[4] == "#3 Ann: third ‹hidden›"
    assert (await _play(console, out, "/regen")).startswith("! floor 3 of branch 'main' is hidden")
    # /retry is /regen's other name (a failed last floor is retried the same way)
    assert (await _play(console, out, "/retry")).startswith("! floor 3 of branch 'main' is hidden")
    assert (await _play(console, out, "/swipe <")) == (
        "! floor 3 of branch 'main' is hidden; nothing to swipe\n"
    )


async def test_continue_extends_the_reply_on_a_new_page(offline_engine: TavernService) -> None:
    console, out = await _console(offline_engine, jsonl=True)
    first = json.loads(await _play(console, out, "hello"))
    more = json.loads(await _play(console, out, "/continue"))
    assert (more["type"], more["floor"], more["page"], more["pages"]) == ("reply", 1, 2, 2)
    assert more["text"].startswith(first["text"]) and len(more["text"]) > len(first["text"])


async def test_impersonate_is_a_draft_and_commits_nothing(offline_engine: TavernService) -> None:
    console, out = await _console(offline_engine, jsonl=True)
    await _play(console, out, "hello")
    row = json.loads(await _play(console, out, "/impersonate"))
    assert row["type"] == "draft" and row["text"]
    history = await offline_engine.history(KEY, MAIN_BRANCH)
    assert [(v.floor, v.pages) for v in history] == [(1, 1)]
    # Without a line editor (a pipe) the draft is printed, not sent.
    plain, plain_out = await _console(offline_engine)
    assert (await _play(plain, plain_out, "/impersonate")).startswith("* draft (not sent): ")
    assert plain.draft == ""


async def test_greetings_while_floor_one_is_the_latest(offline_engine: TavernService) -> None:
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": "Mira",
            "first_mes": "Welcome, traveller.\nSit down.",
            "alternate_greetings": ["You again?", "The inn is closed."],
        },
    }
    console, out = await _console(offline_engine)
    await offline_engine.import_asset(KEY, "card", "mira.json", json.dumps(card).encode())
    await offline_engine.greet(KEY, MAIN_BRANCH, user_name="Ann")
    listed = await _play(console, out, "/greeting")
    assert listed.splitlines() == [
        "* greetings (/greeting N shows one):",
        "  * 1/3 Welcome, traveller.",
        "    2/3 You again?",
        "    3/3 The inn is closed.",
    ]
    shown = (await _play(console, out, "/greeting 3")).splitlines()
    assert shown[0] == "The inn is closed." and shown[1].startswith("  ‹ 3/3 ›")
    assert (await _play(console, out, "/greeting 4")) == "! no greeting 4; greetings 1 to 3\n"
    await _play(console, out, "hello")
    assert await _play(console, out, "/greeting 1") == f"* {GREETINGS_LOCKED}\n"


async def test_dryrun_tokens_and_stop(offline_engine: TavernService) -> None:
    console, out = await _console(offline_engine)
    await _play(console, out, "hello")
    layout = await _play(console, out, "/dryrun what's at the inn?")
    assert "--- user [history:input]\nwhat's at the inn?\n" in layout
    assert "=== 5 messages, " in layout and " world entries\n" in layout
    tokens = (await _play(console, out, "/tokens")).splitlines()
    assert tokens[0].startswith("* prompt ") and "kept for the reply" in tokens[0]
    assert tokens[1].startswith("  history ")
    assert await _play(console, out, "/stop") == f"* {NOTHING_GENERATING}\n"
    jsonl, jsonl_out = await _console(offline_engine, jsonl=True)
    row = json.loads(await _play(jsonl, jsonl_out, "/dryrun hi"))
    assert json.loads(row["message"])["messages"][-1]["content"] == "hi"


async def test_a_stopped_impersonation_says_its_draft_waits(
    offline_engine: TavernService,
) -> None:
    console, out = await _console(offline_engine)
    console.thinking = True  # a terminal: the draft goes into the next prompt
    await _play(console, out, "hello", "/impersonate")
    assert console.draft  # what the model wrote before Ctrl-C, say
    start = len(out.getvalue())
    console.stopped(kept=True)
    assert out.getvalue()[start:] == "* stopped; the draft so far is in the prompt\n"
    console.draft = ""
    console.stopped(kept=True)  # a reply's stop says what it always said
    assert out.getvalue().endswith("* stopped; the reply so far is kept (/regen for another)\n")
