"""Group replies as floors: regenerate keeps the reply's speaker, the dry run in swap and join
mode, variables of every scope per reply floor, and the SillyTavern JSONL export and import
keeping each reply's speaker."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from adapters.storage import SqlStorage
from engine.group.settings import GROUP_SETTING, group_of
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_turns.conftest import KEY, line
from tests.test_turns.group_support import stored_floors, two_members

pytestmark = pytest.mark.timeout(60)


async def test_regenerate_on_the_latest_reply_keeps_its_speaker(
    remote: TavernService, storage: SqlStorage, fake: FakeOpenAIServer
) -> None:
    await two_members(remote)
    fake.script(FakeReply(text="Bob 1."), FakeReply(text="Mira 1."), FakeReply(text="Mira 2."))
    await remote.respond(KEY, MAIN_BRANCH, [line("Bob, Mira, report.")])
    view = await remote.regenerate(KEY, MAIN_BRANCH)
    assert (view.floor, view.page, view.pages, view.character, view.text) == (
        2,
        2,
        2,
        "Mira",
        "Mira 2.",
    )
    # The regenerated prompt is Mira's again (her card, Bob's reply named in history).
    request = str(fake.chat_requests[2].messages)
    assert "Mira keeps the lighthouse." in request and "Bob: Bob 1." in request
    assert "Bob sails the ferry." not in request
    swiped = await remote.swipe(KEY, MAIN_BRANCH, -1)
    assert (swiped.page, swiped.character, swiped.text) == (1, "Mira", "Mira 1.")
    history = await remote.history(KEY, MAIN_BRANCH)
    assert [(h.character, h.text) for h in history] == [("Bob", "Bob 1."), ("Mira", "Mira 1.")]
    assert [f.speaker for f in await stored_floors(storage)] == ["Bob", "Mira"]


async def test_the_dry_run_of_swap_has_the_speakers_card_and_join_has_both_wrapped(
    remote: TavernService,
) -> None:
    await two_members(remote)
    swap = json.dumps((await remote.dry_run(KEY, MAIN_BRANCH, "Hello."))["messages"])
    assert "Mira keeps the lighthouse." in swap and "Bob sails the ferry." not in swap
    # join, with SillyTavern's prefix and suffix macros ({{char}} is each member).
    ids = await remote.parts.sessions.ids(KEY)
    settings = (await remote.parts.sessions.settings(ids.session_id)).settings
    group = group_of(settings.extra)
    assert group is not None
    joined = replace(group, mode="join", join_prefix="[{{char}}'s <FIELDNAME>]", join_suffix="[/]")
    await remote.parts.sessions.update(ids.session_id, **{GROUP_SETTING: joined.to_json()})
    join = json.dumps((await remote.dry_run(KEY, MAIN_BRANCH, "Hello."))["messages"])
    wrapped = (
        "[Mira's Description]Mira keeps the lighthouse.[/]\n"
        "[Bob's Description]Bob sails the ferry.[/]"
    )
    assert wrapped in [m["content"] for m in json.loads(join)]


async def test_variables_of_every_scope_live_per_reply_floor(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    # Each member's card writes the branch scope while its prompt is assembled.
    await two_members(remote, mira="{{setvar::last::{{char}}}}Mira keeps the lighthouse.")
    await remote.import_asset(
        KEY,
        "card",
        "bob.json",
        json.dumps(
            {
                "spec": "chara_card_v2",
                "spec_version": "2.0",
                "data": {
                    "name": "Bob",
                    "description": "{{setvar::last::{{char}}}}{{addvar::bobs::1}}Bob.",
                    "first_mes": "",
                    "extensions": {"talkativeness": 0},
                },
            }
        ).encode(),
        bind=False,
    )
    fake.script(FakeReply(text="B."), FakeReply(text="M."))
    await remote.respond(KEY, MAIN_BRANCH, [line("Bob, Mira?")])
    branch = await remote.variables(KEY, MAIN_BRANCH, "branch")
    assert (branch["last"], branch["bobs"]) == ("Mira", 1)  # Bob's floor, then Mira's
    for scope, value in (("floor", 1), ("page", 2), ("chat", 3), ("global", 4), ("branch", 5)):
        await remote.set_variable(KEY, MAIN_BRANCH, f"v_{scope}", value, scope)  # type: ignore[arg-type]
    merged = await remote.variables(KEY, MAIN_BRANCH)
    assert [merged[f"v_{s}"] for s in ("floor", "page", "chat", "global", "branch")] == [
        1,
        2,
        3,
        4,
        5,
    ]
    # A new page of Mira's floor starts without page 1's page scope; swiping back restores it.
    fake.script(FakeReply(text="M again."))
    await remote.regenerate(KEY, MAIN_BRANCH)
    assert "v_page" not in await remote.variables(KEY, MAIN_BRANCH, "page")
    assert (await remote.variables(KEY, MAIN_BRANCH, "branch"))["bobs"] == 1
    await remote.swipe(KEY, MAIN_BRANCH, -1)
    assert (await remote.variables(KEY, MAIN_BRANCH, "page"))["v_page"] == 2
    assert (await remote.variables(KEY, MAIN_BRANCH, "floor"))["v_floor"] == 1


async def test_the_export_names_each_speaker_and_a_group_chat_import_keeps_them(
    remote: TavernService, storage: SqlStorage, fake: FakeOpenAIServer
) -> None:
    await two_members(remote)
    fake.script(FakeReply(text="Bob here."), FakeReply(text="Mira here."))
    await remote.respond(KEY, MAIN_BRANCH, [line("Bob, Mira?")])
    data = await remote.export_chat(KEY, MAIN_BRANCH)
    rows = [json.loads(row) for row in data.decode().splitlines()]
    assert [(r["name"], r["mes"], r["is_user"]) for r in rows[1:]] == [
        ("Ann", "Bob, Mira?", True),
        ("Bob", "Bob here.", False),
        ("Mira", "Mira here.", False),
    ]
    # Each reply carries its speaker's avatar as SillyTavern marks a group reply.
    assert [(r.get("force_avatar"), r.get("original_avatar")) for r in rows[1:]] == [
        (None, None),
        ("/thumbnail?type=avatar&file=Bob.png", "Bob.png"),
        ("/thumbnail?type=avatar&file=Mira.png", "Mira.png"),
    ]
    summary = await remote.import_asset(KEY, "chat", "crew.jsonl", data)
    name = summary.details["branch"]
    history = await remote.history(KEY, name)
    assert [(h.character, h.text) for h in history] == [
        ("Bob", "Bob here."),
        ("Mira", "Mira here."),
    ]
    assert [f.speaker for f in await stored_floors(storage, name)] == ["Bob", "Mira"]
    # The imported floors play on: a regenerate there plays Mira's card.
    fake.script(FakeReply(text="Mira, imported."))
    view = await remote.regenerate(KEY, name)
    assert (view.character, view.text) == ("Mira", "Mira, imported.")
    assert "Mira keeps the lighthouse." in str(fake.chat_requests[-1].messages)
    again = [
        json.loads(row) for row in (await remote.export_chat(KEY, name)).decode().splitlines()
    ]
    assert [r["name"] for r in again[1:]] == ["Ann", "Bob", "Mira"]
    assert again[3]["original_avatar"] == "Mira.png"  # the regenerated page keeps the mark


async def test_a_solo_chat_import_records_no_speakers(
    remote: TavernService, storage: SqlStorage
) -> None:
    rows = [
        {"user_name": "Ann", "character_name": "Mira"},
        {"name": "Ann", "is_user": True, "mes": "Hi."},
        {"name": "Mira", "is_user": False, "mes": "Hello."},
    ]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    summary = await remote.import_asset(KEY, "chat", "solo.jsonl", data)
    floors = await stored_floors(storage, summary.details["branch"])
    assert [f.speaker for f in floors] == [None]


async def test_a_fork_plays_the_same_group_and_an_edit_forks_before_the_turn(
    remote: TavernService, storage: SqlStorage, fake: FakeOpenAIServer
) -> None:
    await two_members(remote)
    fake.script(FakeReply(text="B1."), FakeReply(text="M1."))
    await remote.respond(KEY, MAIN_BRANCH, [line("Bob, Mira, ready?")])
    await remote.fork(KEY, MAIN_BRANCH, after_floor=1, name="thread")
    fake.script(FakeReply(text="M on the thread."))
    view = await remote.respond(KEY, "thread", [line("Mira?")])
    assert (view.floor, view.character) == (2, "Mira")
    # The edit replaces the turn's message (floor 1), not the reply-only floor 2.
    fake.script(FakeReply(text="B2."), FakeReply(text="M2."))
    edited = await remote.edit_and_regenerate(KEY, MAIN_BRANCH, [line("Bob, Mira, go?")])
    assert (edited.branch, edited.floor, edited.character) == ("main-edit-1", 2, "Mira")
    history = await remote.history(KEY, "main-edit-1")
    assert [(h.character, h.inputs) for h in history] == [
        ("Bob", (("Ann", "Bob, Mira, go?"),)),
        ("Mira", ()),
    ]


async def test_continue_on_a_group_reply_plays_its_speaker(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    await two_members(remote)
    fake.script(FakeReply(text="Mira 1."), FakeReply(text="Bob 1."), FakeReply(text=" And more."))
    await remote.respond(KEY, MAIN_BRANCH, [line("Mira and Bob?")])  # Mira, then Bob
    view = await remote.continue_reply(KEY, MAIN_BRANCH)
    assert (view.character, view.text) == ("Bob", "Bob 1. And more.")
    request = str(fake.chat_requests[2].messages)
    assert "Bob sails the ferry." in request and "Mira keeps the lighthouse." not in request
