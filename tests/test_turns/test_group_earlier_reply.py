"""🔄 ◀️ ▶️ on an earlier member's reply of the latest group turn (issue 17): Mira answered on
floor 1, then Bob on floor 2 (the latest); regenerating or swiping Mira's reply changes her
floor only, her prompt is the story up to her floor, and the branch's variables follow her
active page with Bob's later writes on top. Refused when a branch forks at or after her floor,
when a later floor holds a user's message, or when a later floor keeps a saved state."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import EngineError, InvalidTransitionError
from engine.timeline.errors import PageTransitionError
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from engine.variables.store import SNAPSHOT_EVERY
from tests.fakes.openai_server import FakeError, FakeOpenAIServer, FakeReply
from tests.test_turns.conftest import KEY, line
from tests.test_turns.group_support import card_bytes

pytestmark = pytest.mark.timeout(60)

MIRA = "{{setvar::last::Mira}}{{setvar::mood::{{roll::1d1000000}}}}Mira keeps the lighthouse."
BOB = "{{setvar::last::Bob}}{{addvar::bobs::1}}Bob sails the ferry."


async def mira_then_bob(service: TavernService) -> None:
    """A group of Mira and Bob whose cards write branch variables as their prompts are built
    (Mira's ``mood`` is a roll seeded by her floor and page, so each page writes its own)."""
    await service.import_asset(KEY, "card", "mira.json", card_bytes("Mira", MIRA))
    await service.import_asset(KEY, "card", "bob.json", card_bytes("Bob", BOB), bind=False)
    await service.add_member(KEY, "Bob")


async def branch_vars(service: TavernService, branch: str = MAIN_BRANCH) -> dict[str, Any]:
    return await service.variables(KEY, branch, "branch")


async def shown(service: TavernService, branch: str = MAIN_BRANCH) -> list[tuple[str, str]]:
    return [(h.character, h.text) for h in await service.history(KEY, branch)]


async def test_regenerate_and_swipe_change_only_the_earlier_reply_and_its_variables(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    await mira_then_bob(remote)
    fake.script(FakeReply(text="Mira 1."), FakeReply(text="Bob 1."))
    await remote.respond(KEY, MAIN_BRANCH, [line("Mira, Bob, report.")])
    assert await shown(remote) == [("Mira", "Mira 1."), ("Bob", "Bob 1.")]
    await remote.set_variable(KEY, MAIN_BRANCH, "note", 7, "branch")  # an explicit write
    first = await branch_vars(remote)
    assert (first["last"], first["bobs"], first["note"]) == ("Bob", 1, 7)

    fake.script(FakeReply(text="Mira 2."))
    view = await remote.regenerate(KEY, MAIN_BRANCH, floor=1)
    assert (view.floor, view.page, view.pages, view.character, view.text) == (
        1,
        2,
        2,
        "Mira",
        "Mira 2.",
    )
    # Her prompt is the story up to her floor, with her card: Bob's later reply is not in it.
    request = str(fake.chat_requests[-1].messages)
    assert "Mira keeps the lighthouse." in request and "Mira, Bob, report." in request
    assert "Bob 1." not in request and "Bob sails the ferry." not in request
    assert await shown(remote) == [("Mira", "Mira 2."), ("Bob", "Bob 1.")]
    assert await remote.page_texts(KEY, MAIN_BRANCH, 2) == ["Bob 1."]
    second = await branch_vars(remote)
    # Mira's new page wrote a mood of its own; Bob's writes and the explicit one stay on top.
    assert second["mood"] != first["mood"]
    assert (second["last"], second["bobs"], second["note"]) == ("Bob", 1, 7)

    back = await remote.swipe(KEY, MAIN_BRANCH, -1, floor=1)
    assert (back.floor, back.page, back.pages, back.text) == (1, 1, 2, "Mira 1.")
    assert await branch_vars(remote) == first
    assert await shown(remote) == [("Mira", "Mira 1."), ("Bob", "Bob 1.")]
    again = await remote.swipe(KEY, MAIN_BRANCH, 1, floor=1)
    assert (again.page, again.text) == (2, "Mira 2.")
    assert await branch_vars(remote) == second
    # The latest floor still regenerates as before, on top of Mira's active page 2.
    fake.script(FakeReply(text="Bob 2."))
    latest = await remote.regenerate(KEY, MAIN_BRANCH)
    assert (latest.floor, latest.page, latest.text) == (2, 2, "Bob 2.")
    assert "Mira 2." in str(fake.chat_requests[-1].messages)
    assert (await branch_vars(remote))["mood"] == second["mood"]


async def test_a_failed_regenerate_of_the_earlier_reply_leaves_everything_as_it_was(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    await mira_then_bob(remote)
    fake.script(FakeReply(text="Mira 1."), FakeReply(text="Bob 1."))
    await remote.respond(KEY, MAIN_BRANCH, [line("Mira, Bob, report.")])
    before = await branch_vars(remote)
    fake.script(FakeError(status=400, message="scripted refusal"))
    with pytest.raises(EngineError, match="scripted refusal"):
        await remote.regenerate(KEY, MAIN_BRANCH, floor=1)
    assert await shown(remote) == [("Mira", "Mira 1."), ("Bob", "Bob 1.")]
    assert await remote.page_texts(KEY, MAIN_BRANCH, 1) == ["Mira 1."]
    assert await remote.page_texts(KEY, MAIN_BRANCH, 2) == ["Bob 1."]
    assert await branch_vars(remote) == before
    # The floor takes pages again afterwards.
    fake.script(FakeReply(text="Mira 2."))
    view = await remote.regenerate(KEY, MAIN_BRANCH, floor=1)
    assert (view.page, view.pages, view.text) == (2, 2, "Mira 2.")


async def test_refused_when_a_branch_forks_at_or_after_the_earlier_reply(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    await mira_then_bob(remote)
    fake.script(FakeReply(text="Mira 1."), FakeReply(text="Bob 1."))
    await remote.respond(KEY, MAIN_BRANCH, [line("Mira, Bob, report.")])
    await remote.fork(KEY, MAIN_BRANCH, after_floor=2, name="alt")
    asked = len(fake.chat_requests)
    with pytest.raises(PageTransitionError, match="branch 'alt' forks at or after it"):
        await remote.regenerate(KEY, MAIN_BRANCH, floor=1)
    with pytest.raises(PageTransitionError, match="branch 'alt' forks at or after it"):
        await remote.swipe(KEY, MAIN_BRANCH, -1, floor=1)
    assert len(fake.chat_requests) == asked
    assert await remote.page_texts(KEY, MAIN_BRANCH, 1) == ["Mira 1."]
    assert await shown(remote, "alt") == [("Mira", "Mira 1."), ("Bob", "Bob 1.")]


async def test_refused_once_a_later_floor_holds_a_users_message(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    await mira_then_bob(remote)
    fake.script(FakeReply(text="Mira 1."), FakeReply(text="Bob 1."), FakeReply(text="Mira 3."))
    await remote.respond(KEY, MAIN_BRANCH, [line("Mira, Bob, report.")])
    await remote.respond(KEY, MAIN_BRANCH, [line("Mira, thanks.")])  # floor 3
    asked = len(fake.chat_requests)
    for floor in (1, 2):
        with pytest.raises(InvalidTransitionError, match="not its branch's latest floor"):
            await remote.regenerate(KEY, MAIN_BRANCH, floor=floor)
        with pytest.raises(InvalidTransitionError, match="not its branch's latest floor"):
            await remote.swipe(KEY, MAIN_BRANCH, 1, floor=floor)
    assert len(fake.chat_requests) == asked
    assert [len(await remote.page_texts(KEY, MAIN_BRANCH, n)) for n in (1, 2, 3)] == [1, 1, 1]


async def test_refused_when_a_later_floor_keeps_a_saved_state(service: TavernService) -> None:
    # Floors up to SNAPSHOT_EVERY: Mira then Bob each turn, so the last turn is Mira on
    # SNAPSHOT_EVERY - 1 and Bob on SNAPSHOT_EVERY, whose pages store branch snapshots.
    await mira_then_bob(service)
    for _ in range(SNAPSHOT_EVERY // 2):
        await service.respond(KEY, MAIN_BRANCH, [line("Mira, Bob?")])
    history = await service.history(KEY, MAIN_BRANCH, limit=2)
    assert [(h.floor, h.character) for h in history] == [
        (SNAPSHOT_EVERY - 1, "Mira"),
        (SNAPSHOT_EVERY, "Bob"),
    ]
    saved = f"floor {SNAPSHOT_EVERY} after it keeps a saved state"
    with pytest.raises(PageTransitionError, match=saved):
        await service.regenerate(KEY, MAIN_BRANCH, floor=SNAPSHOT_EVERY - 1)
    with pytest.raises(PageTransitionError, match=saved):
        await service.swipe(KEY, MAIN_BRANCH, -1, floor=SNAPSHOT_EVERY - 1)
    assert len(await service.page_texts(KEY, MAIN_BRANCH, SNAPSHOT_EVERY - 1)) == 1
