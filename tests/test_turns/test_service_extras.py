"""Imports, previews, dry runs, platform links, resets, explicit variables, continue, the other
instance slots, summary tags before regex scripts, and the named limits of the service."""

from __future__ import annotations

import json

import pytest

from engine.errors import EngineError, FormatError, LimitExceededError
from engine.timeline.checks import MAX_INPUTS_PER_FLOOR
from engine.turns import context, transfer
from engine.turns.api import MAIN_BRANCH, PlatformRef, UserLine
from engine.turns.locks import BranchLocks
from engine.turns.service import MAX_INPUT_CHARS, TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_turns.conftest import KEY, Recorder, line

pytestmark = pytest.mark.timeout(60)

CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Mira",
        "description": "{{char}} is a fox.",
        "personality": "",
        "scenario": "",
        "first_mes": "Hello!",
        "mes_example": "",
        "character_book": {
            "entries": [
                {"keys": ["forest"], "content": "The forest is dark.", "id": 1, "enabled": True}
            ]
        },
    },
}
PRESET = {"prompts": [{"identifier": "main", "name": "Main", "content": "Play {{char}}."}]}
BOOK = {"entries": {"0": {"uid": 0, "key": ["inn"], "content": "The inn is warm."}}}
SCRIPT = {
    "id": "s1",
    "scriptName": "hide the word summary",
    "findRegex": "/summary/g",
    "replaceString": "X",
    "placement": [2],
    "disabled": False,
    "markdownOnly": False,
    "promptOnly": False,
    "runOnEdit": True,
    "substituteRegex": 0,
    "trimStrings": [],
}


def raw(obj: object) -> bytes:
    return json.dumps(obj).encode()


async def test_imports_bind_assets_and_shape_the_prompt(
    remote: TavernService, fake: FakeOpenAIServer, events: Recorder
) -> None:
    card = await remote.import_asset(KEY, "card", "mira.json", raw(CARD))
    assert (card.name, card.details["book_entries"]) == ("Mira", 1)
    assert (await remote.import_asset(KEY, "preset", "story.json", raw(PRESET))).name == "story"
    assert (await remote.import_asset(KEY, "worldbook", "town.json", raw(BOOK))).name == "town"
    regex = await remote.import_asset(KEY, "regex", "clean.json", raw([SCRIPT]))
    assert regex.details == {"scripts": 1}
    info = await remote.session_info(KEY)
    assert (info.character, info.preset, info.worldbooks) == ("Mira", "story", ("town",))
    with pytest.raises(FormatError):
        await remote.import_asset(KEY, "preset", "bad.json", b"{not json")
    fake.script(FakeReply(text="Welcome.<summary>Ann entered the inn</summary>"))
    view = await remote.respond(KEY, MAIN_BRANCH, [line("I walk from the forest to the inn")])
    # summary tags were taken out before the regex script could rewrite them
    assert view.text == "Welcome."
    extracted = [e for e in events.events if e.name == "memory.extracted"]
    assert extracted and extracted[0].payload["items"][0]["text"] == "Ann entered the inn"
    prompt = [m["content"] for m in fake.chat_requests[0].messages]
    assert prompt[0] == "Play Mira."
    assert any("The forest is dark." in c for c in prompt)
    assert any("The inn is warm." in c for c in prompt)
    assert "worldbook.matched" in events.names()
    dry = await remote.dry_run(KEY, MAIN_BRANCH, "back to the forest")
    assert dry["messages"][-1]["content"] == "back to the forest"
    assert len(fake.chat_requests) == 1  # a dry run calls no model


async def test_regex_scripts_rewrite_the_stored_reply(
    remote: TavernService, fake: FakeOpenAIServer, events: Recorder
) -> None:
    await remote.import_asset(KEY, "regex", "clean.json", raw(SCRIPT))
    fake.script(FakeReply(text="a summary of it"))
    view = await remote.respond(KEY, MAIN_BRANCH, [line("hi")])
    assert view.text == "a X of it"
    assert "regex.applied" in events.names()


async def test_chat_import_becomes_a_branch(service: TavernService) -> None:
    chat = [
        {"user_name": "Ann", "character_name": "Mira", "chat_metadata": {}},
        {"name": "Ann", "is_user": True, "mes": "hi"},
        {"name": "Mira", "is_user": False, "mes": "two", "swipes": ["one", "two"], "swipe_id": 1},
        {"name": "Ann", "is_user": True, "mes": "bye"},
        {"name": "Mira", "is_user": False, "mes": "farewell"},
    ]
    data = "\n".join(json.dumps(x) for x in chat).encode()
    summary = await service.import_asset(KEY, "chat", "old.jsonl", data)
    assert summary.details["floors"] == 2
    views = await service.history(KEY, summary.name)
    assert [(v.floor, v.page, v.pages, v.text) for v in views] == [
        (1, 2, 2, "two"),
        (2, 1, 1, "farewell"),
    ]
    exported = [json.loads(x) for x in (await service.export_chat(KEY, summary.name)).splitlines()]
    assert [r.get("mes") for r in exported[1:]] == ["hi", "two", "bye", "farewell"]


async def test_preview_and_explicit_variables(service: TavernService) -> None:
    await service.set_variable(KEY, MAIN_BRANCH, "gold", 5, "chat")
    assert await service.preview(KEY, MAIN_BRANCH, "{{getvar::gold}} {{setvar::gold::9}}") == "5 "
    assert (await service.variables(KEY, MAIN_BRANCH, "chat")) == {"gold": 5}
    await service.respond(KEY, MAIN_BRANCH, [line("hi")])
    await service.delete_variable(KEY, MAIN_BRANCH, "gold", "chat")
    history = await service.variable_history(KEY, MAIN_BRANCH, "gold")
    assert [(w.value, w.deleted) for w in history] == [(5, False), (None, True)]


async def test_platform_links_hide_and_reset(service: TavernService) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("one")])
    await service.regenerate(KEY, MAIN_BRANCH)
    await service.link_message(
        KEY, "msg-9", PlatformRef(branch=MAIN_BRANCH, floor=1, page=2, role="assistant")
    )
    assert await service.resolve_message(KEY, "msg-9") == PlatformRef(
        branch=MAIN_BRANCH, floor=1, page=2, role="assistant"
    )
    assert await service.resolve_message(KEY, "unknown") is None
    await service.link_message(
        KEY, "in-1", PlatformRef(branch=MAIN_BRANCH, floor=1, page=None, role="user")
    )
    await service.hide_message(KEY, "in-1")
    assert await service.history(KEY, MAIN_BRANCH) == []  # the floor is hidden, not deleted
    await service.configure(KEY, macro_mode="full")
    await service.respond(KEY, MAIN_BRANCH, [line("{{setvar::kept::1}}two")])
    assert "kept" in await service.variables(KEY, MAIN_BRANCH)
    await service.reset(KEY)
    assert await service.history(KEY, MAIN_BRANCH) == []
    # Too many messages for one floor: the timeline's limit, named with the branch as users
    # know it, and still no floor.
    with pytest.raises(LimitExceededError, match="branch 'main'") as crowded:
        await service.respond(KEY, MAIN_BRANCH, [line("hi")] * (MAX_INPUTS_PER_FLOOR + 1))
    assert crowded.value.limit == "MAX_INPUTS_PER_FLOOR"
    assert await service.history(KEY, MAIN_BRANCH) == []
    assert "kept" not in await service.variables(KEY, MAIN_BRANCH)
    assert (await service.respond(KEY, MAIN_BRANCH, [line("fresh")])).floor == 3


async def test_continue_extends_the_active_reply(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    fake.script(FakeReply(text="Once upon"), FakeReply(text=" a time."))
    await remote.respond(KEY, MAIN_BRANCH, [line("tell")])
    view = await remote.continue_reply(KEY, MAIN_BRANCH)
    assert (view.page, view.pages, view.text) == (2, 2, "Once upon a time.")
    # the continue request ends with the text being continued
    assert any(m["content"] == "Once upon" for m in fake.chat_requests[1].messages)


async def test_compat_plus_runs_director_and_verifier(
    service: TavernService, events: Recorder
) -> None:
    await service.configure(
        KEY, prompt_mode="compat_plus", slots=["narrator", "director", "verifier"]
    )
    await service.respond(KEY, MAIN_BRANCH, [line("hi")])
    slots = [e.payload["slot"] for e in events.events if e.name == "generation.started"]
    assert slots == ["director", "narrator", "verifier"]
    await service.configure(KEY, prompt_mode="compat_strict")
    events.events.clear()
    await service.respond(KEY, MAIN_BRANCH, [line("again")])
    slots = [e.payload["slot"] for e in events.events if e.name == "generation.started"]
    assert slots == ["narrator"]


async def test_named_limits(service: TavernService, monkeypatch: pytest.MonkeyPatch) -> None:
    # An over-long message is a limit (named, with its bound), not a failed turn, and it
    # leaves no floor behind.
    with pytest.raises(LimitExceededError, match="MAX_INPUT_CHARS") as refused:
        await service.respond(KEY, MAIN_BRANCH, [line("x" * (MAX_INPUT_CHARS + 1))])
    assert (refused.value.limit, refused.value.value) == ("MAX_INPUT_CHARS", MAX_INPUT_CHARS)
    assert await service.history(KEY, MAIN_BRANCH) == []
    for text in ("one", "two", "three"):
        await service.respond(KEY, MAIN_BRANCH, [line(text)])
    monkeypatch.setattr(transfer, "EXPORT_PAGE", 2)
    exported = (await service.export_chat(KEY, MAIN_BRANCH)).decode().splitlines()
    assert len(exported) == 1 + 3 * 2  # paging in units of EXPORT_PAGE keeps every floor
    monkeypatch.setattr(transfer, "MAX_IMPORT_FLOORS", 1)
    chat = "\n".join(
        json.dumps(x)
        for x in ({"user_name": "A"}, {"name": "M", "mes": "a"}, {"name": "M", "mes": "b"})
    ).encode()
    with pytest.raises(EngineError, match="MAX_IMPORT_FLOORS"):
        await service.import_asset(KEY, "chat", "big.jsonl", chat)


async def test_history_window_bounds_what_a_turn_reads(
    remote: TavernService, fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for text in ("one", "two", "three"):
        await remote.respond(KEY, MAIN_BRANCH, [line(text)])
    monkeypatch.setattr(
        context.read_turn, "__kwdefaults__", {**context.read_turn.__kwdefaults__, "window": 1}
    )
    await remote.respond(KEY, MAIN_BRANCH, [line("four")])
    contents = [m["content"] for m in fake.chat_requests[-1].messages]
    assert "one" not in contents and "three" in contents and contents[-1] == "four"


async def test_branch_locks_are_dropped_when_idle() -> None:
    locks = BranchLocks()
    async with locks.hold(1, "main"):
        assert locks.busy(1, "main") and len(locks) == 1
    assert not locks.busy(1, "main") and len(locks) == 0


async def test_edit_and_regenerate_answers_on_a_new_branch(service: TavernService) -> None:
    await service.configure(KEY, macro_mode="full")
    await service.respond(KEY, MAIN_BRANCH, [line("{{setvar::a::1}}first")])
    await service.respond(KEY, MAIN_BRANCH, [line("{{setvar::b::1}}typo")])
    view = await service.edit_and_regenerate(KEY, MAIN_BRANCH, [line("fixed")])
    assert (view.branch, view.floor) == ("main-edit-2", 2)
    assert "You said: fixed" in view.text
    assert set(await service.variables(KEY, "main-edit-2")) == {"a"}
    assert set(await service.variables(KEY, MAIN_BRANCH)) == {"a", "b"}
    with pytest.raises(EngineError):
        await service.edit_and_regenerate(KEY, "main-edit-2-none", [line("x")])


async def test_dry_run_persists_nothing(service: TavernService) -> None:
    preset = {
        "prompts": [{"identifier": "main", "name": "Main", "content": "{{setvar::d::1}}Go."}]
    }
    await service.import_asset(KEY, "preset", "p.json", raw(preset))
    report = await service.dry_run(KEY, MAIN_BRANCH, "test")
    assert report["messages"][0]["content"] == "Go."
    assert [m["key"] for m in report["macro"]["mutations"]] == ["d"]
    assert await service.variables(KEY, MAIN_BRANCH) == {}
    assert await service.history(KEY, MAIN_BRANCH) == []
    with pytest.raises(EngineError):
        await service.dry_run(KEY, MAIN_BRANCH, "")


async def test_timed_world_info_state_is_kept_per_branch(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    book = {
        "entries": {
            "0": {"uid": 0, "key": ["dragon"], "content": "A dragon circles above.", "sticky": 4}
        }
    }
    await remote.import_asset(KEY, "worldbook", "sky.json", raw(book))

    def sees_dragon(index: int) -> bool:
        return any("dragon circles" in m["content"] for m in fake.chat_requests[index].messages)

    fake.responder = lambda body: FakeReply(text="ok")  # type: ignore[assignment]
    await remote.respond(KEY, MAIN_BRANCH, [line("a dragon!")])
    await remote.fork(KEY, MAIN_BRANCH, after_floor=0, name="calm")
    await remote.respond(KEY, MAIN_BRANCH, [line("what now")])
    await remote.respond(KEY, "calm", [line("what now")])
    for _ in range(3):
        await remote.respond(KEY, MAIN_BRANCH, [line("later")])
    # the keyword on turn 1; sticky keeps the entry for main's next turn (out of the scan
    # window by then), the fork from before the activation never has it, later it lapses
    seen = [sees_dragon(i) for i in range(6)]
    assert seen[:3] == [True, True, False] and seen[-1] is False


async def test_a_hidden_reply_page_shows_no_text(service: TavernService) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("one")])
    ref = PlatformRef(branch=MAIN_BRANCH, floor=1, page=1, role="assistant")
    await service.link_message(KEY, "reply-1", ref)
    await service.hide_message(KEY, "reply-1")
    (view,) = await service.history(KEY, MAIN_BRANCH)
    assert (view.floor, view.text) == (1, "")
    # the hidden reply is left out of the next prompt too, but the floor still counts
    assert (await service.respond(KEY, MAIN_BRANCH, [line("two")])).floor == 2


async def test_dry_run_speaks_as_the_branchs_last_speaker(service: TavernService) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("hi")])
    report = await service.dry_run(KEY, MAIN_BRANCH, "next")
    assert "and Ann." in report["messages"][0]["content"]


async def test_greeting_opens_an_empty_branch(service: TavernService) -> None:
    card = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            **CARD["data"],  # type: ignore[dict-item]
            "first_mes": "Welcome, {{user}}! I am {{char}}.",
            "alternate_greetings": ["Oh, {{user}} again."],
        },
    }
    assert await service.greet(KEY) is None  # no card bound yet
    await service.import_asset(KEY, "card", "mira.json", raw(card))
    view = await service.greet(KEY, user_name="Ann")
    assert view is not None
    assert (view.floor, view.page, view.pages) == (1, 1, 2)
    assert view.text == "Welcome, Ann! I am Mira."
    assert (await service.swipe(KEY, MAIN_BRANCH, 1)).text == "Oh, Ann again."
    assert await service.greet(KEY) is None  # only an empty branch is greeted
    reply = await service.respond(KEY, MAIN_BRANCH, [line("hello")])
    assert reply.floor == 2


@pytest.mark.parametrize(
    "changes",
    [
        {"prompt_mode": "turbo"},
        {"macro_mode": "sometimes"},
        {"slots": ["narrator", "critic"]},
        {"tools": {"max_steps": 10_000}},
    ],
)
async def test_bad_session_settings_are_refused(
    service: TavernService, changes: dict[str, object]
) -> None:
    with pytest.raises(EngineError, match="session setting"):
        await service.configure(KEY, **changes)


async def test_user_input_regex_scripts_change_the_stored_message(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    script = {**SCRIPT, "findRegex": "/darn/g", "replaceString": "gosh", "placement": [1]}
    await remote.import_asset(KEY, "regex", "polite.json", raw(script))
    fake.script(FakeReply(text="ok"))
    await remote.respond(
        KEY, MAIN_BRANCH, [UserLine(speaker=line("").speaker, text="darn it", ref="m1")]
    )
    assert fake.chat_requests[0].messages[-1]["content"] == "gosh it"
    exported = (await remote.export_chat(KEY, MAIN_BRANCH)).decode().splitlines()
    assert json.loads(exported[1])["mes"] == "gosh it"
    # the input's platform message still maps to its floor
    assert await remote.resolve_message(KEY, "m1") == PlatformRef(
        branch=MAIN_BRANCH, floor=1, page=None, role="user"
    )
