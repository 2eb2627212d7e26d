"""Called members: a user's reply to a member's message (``respond(called=...)``) makes that
member answer instead of the strategy's choice, muted or not; names that are not members are
ignored, and a solo session ignores ``called``."""

from __future__ import annotations

import pytest

from adapters.storage import SqlStorage
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_turns.conftest import KEY, line
from tests.test_turns.group_support import card_bytes, stored_floors, two_members

pytestmark = pytest.mark.timeout(60)


async def test_a_called_member_answers_instead_of_the_one_named(
    remote: TavernService, storage: SqlStorage, fake: FakeOpenAIServer
) -> None:
    await two_members(remote)
    await remote.mute_member(KEY, "Bob", True)
    fake.script(FakeReply(text="Ferry's late."))
    # The message names Mira, but the user replied to Bob (muted): Bob alone answers.
    view = await remote.respond(KEY, MAIN_BRANCH, [line("Mira says hi.")], called=["bob"])
    assert (view.floor, view.character, view.text) == (1, "Bob", "Ferry's late.")
    floors = await stored_floors(storage)
    # The floor holds the user's lines, so it carries the turn's seed as every first floor.
    assert [(f.speaker, f.seed is not None) for f in floors] == [("Bob", True)]
    assert "Bob sails the ferry." in str(fake.chat_requests[0].messages)


async def test_called_members_answer_in_order_and_strangers_are_ignored(
    remote: TavernService, storage: SqlStorage, fake: FakeOpenAIServer
) -> None:
    await two_members(remote)
    await remote.set_group_strategy(KEY, "manual")  # the strategy alone would answer nobody
    fake.script(FakeReply(text="Bob here."), FakeReply(text="Mira here."))
    await remote.respond(KEY, MAIN_BRANCH, [line("Hey.")], called=["Zed", "Bob", "Mira", "Bob"])
    assert [f.speaker for f in await stored_floors(storage)] == ["Bob", "Mira"]
    # Only strangers called: the strategy decides (manual: nobody answers).
    view = await remote.respond(KEY, MAIN_BRANCH, [line("Anyone?")], called=["Zed"])
    assert view.unanswered


async def test_a_solo_session_ignores_called(
    remote: TavernService, storage: SqlStorage, fake: FakeOpenAIServer
) -> None:
    await remote.import_asset(KEY, "card", "mira.json", card_bytes("Mira", "Mira."))
    fake.script(FakeReply(text="Hello."))
    view = await remote.respond(KEY, MAIN_BRANCH, [line("Hi.")], called=["Bob"])
    assert (view.character, view.text) == ("Mira", "Hello.")
    assert [f.speaker for f in await stored_floors(storage)] == [None]
