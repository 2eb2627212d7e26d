"""Group turns through TavernService and the fake model server: who answers a user's message
(SillyTavern's activation strategies), each reply on its own floor with its speaker, in the
order chosen and each seeing the replies before it; nobody answering; ``speak``; members."""

from __future__ import annotations

import pytest

from adapters.storage import SqlStorage
from engine.errors import ConfigurationError, NotFoundError
from engine.group.activation import activate
from engine.group.settings import GroupSettings
from engine.turns.api import MAIN_BRANCH, ReplyView
from engine.turns.errors import NothingToDoError
from engine.turns.group_turns import SEED_RANGE, draw_seed
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_turns.conftest import KEY, line
from tests.test_turns.group_support import card_bytes, stored_floors, two_members

pytestmark = pytest.mark.timeout(60)


async def test_a_member_named_in_the_message_answers_alone(
    remote: TavernService, storage: SqlStorage, fake: FakeOpenAIServer
) -> None:
    await two_members(remote)
    fake.script(FakeReply(text="The lamp is lit."))
    view = await remote.respond(KEY, MAIN_BRANCH, [line("Mira, what do you think?")])
    assert (view.character, view.text, view.floor) == ("Mira", "The lamp is lit.", 1)
    floors = await stored_floors(storage)
    assert [(f.speaker, f.seed is not None) for f in floors] == [("Mira", True)]
    # Mira's card is the prompt's character; Bob's is not there (swap mode).
    request = str(fake.chat_requests[0].messages)
    assert "Mira keeps the lighthouse." in request and "Bob sails the ferry." not in request


async def test_both_named_answer_in_mention_order_each_seeing_the_one_before(
    remote: TavernService, storage: SqlStorage, fake: FakeOpenAIServer
) -> None:
    await two_members(remote)
    fake.script(FakeReply(text="Aye, the tide turns."), FakeReply(text="Then we wait."))
    speakers: list[str] = []
    replies: list[ReplyView] = []

    async def on_speaker(name: str) -> None:
        speakers.append(name)

    async def on_reply(view: ReplyView) -> None:
        replies.append(view)

    last = await remote.respond(
        KEY,
        MAIN_BRANCH,
        [line("Bob and Mira, shall we sail?")],
        on_speaker=on_speaker,
        on_reply=on_reply,
    )
    assert speakers == ["Bob", "Mira"]
    assert [(r.floor, r.character, r.text) for r in replies] == [
        (1, "Bob", "Aye, the tide turns."),
        (2, "Mira", "Then we wait."),
    ]
    assert last == replies[-1]
    floors = await stored_floors(storage)
    assert [f.speaker for f in floors] == ["Bob", "Mira"]
    # The seed is on the turn's first floor only.
    assert floors[0].seed is not None and floors[1].seed is None
    first, second = fake.chat_requests
    # Mira's prompt holds Bob's reply, named (a group names other speakers' lines), and the
    # user's message from the floor before; Mira's card replaces Bob's.
    contents = [str(m.get("content")) for m in second.messages]
    assert any("Bob: Aye, the tide turns." in c for c in contents)
    assert any("Bob and Mira, shall we sail?" in c for c in contents)
    assert "Mira keeps the lighthouse." in str(contents)
    assert "Bob sails the ferry." in str(first.messages)
    assert "Bob sails the ferry." not in str(contents)
    history = await remote.history(KEY, MAIN_BRANCH)
    assert [(h.character, h.text, h.inputs) for h in history] == [
        ("Bob", "Aye, the tide turns.", (("Ann", "Bob and Mira, shall we sail?"),)),
        ("Mira", "Then we wait.", ()),
    ]


async def test_a_muted_member_never_speaks_on_its_own(
    remote: TavernService, storage: SqlStorage
) -> None:
    await two_members(remote, talk=1.0)  # both would speak at every turn
    info = await remote.mute_member(KEY, "bob", True)  # names are found ignoring case
    assert info.muted == ("Bob",)
    for _ in range(3):
        await remote.respond(KEY, MAIN_BRANCH, [line("Bob, Mira: any news?")])
    assert {f.speaker for f in await stored_floors(storage)} == {"Mira"}
    await remote.mute_member(KEY, "Bob", False)
    await remote.respond(KEY, MAIN_BRANCH, [line("Bob, Mira: any news?")])
    assert [f.speaker for f in await stored_floors(storage)][-2:] == ["Bob", "Mira"]


async def test_list_strategy_answers_with_every_unmuted_member_in_order(
    remote: TavernService, storage: SqlStorage
) -> None:
    await two_members(remote)
    await remote.import_asset(KEY, "card", "cid.json", card_bytes("Cid", "Cid."), bind=False)
    await remote.add_member(KEY, "Cid")
    await remote.mute_member(KEY, "Bob", True)
    info = await remote.set_group_strategy(KEY, "list")
    assert info.strategy == "list"
    await remote.respond(KEY, MAIN_BRANCH, [line("Cid, report.")])  # a mention changes nothing
    assert [f.speaker for f in await stored_floors(storage)] == ["Mira", "Cid"]


async def test_manual_answers_nobody_until_a_member_is_called(
    remote: TavernService, storage: SqlStorage, fake: FakeOpenAIServer
) -> None:
    await two_members(remote)
    await remote.set_group_strategy(KEY, "manual")
    view = await remote.respond(KEY, MAIN_BRANCH, [line("Mira, hello?")])
    assert view.unanswered and view.text == "" and view.floor == 1
    assert fake.chat_requests == []
    # The lines stay in the story: in history and in the next prompt.
    history = await remote.history(KEY, MAIN_BRANCH)
    assert [(h.unanswered, h.inputs) for h in history] == [(True, (("Ann", "Mira, hello?"),))]
    with pytest.raises(NothingToDoError, match="nobody answered floor 1"):
        await remote.regenerate(KEY, MAIN_BRANCH)
    fake.script(FakeReply(text="Ahoy."))
    spoken = await remote.speak(KEY, MAIN_BRANCH, "bob")
    assert (spoken.floor, spoken.character, spoken.text) == (2, "Bob", "Ahoy.")
    assert "Mira, hello?" in str(fake.chat_requests[0].messages)
    floors = await stored_floors(storage)
    assert [(f.speaker, f.seed is None) for f in floors] == [(None, False), ("Bob", True)]
    with pytest.raises(NotFoundError, match="Zed is not a character.*Mira, Bob"):
        await remote.speak(KEY, MAIN_BRANCH, "Zed")


async def test_the_stored_seed_names_the_same_speakers_again(
    remote: TavernService, storage: SqlStorage
) -> None:
    await two_members(remote, talk=0.5)  # who speaks is left to chance
    for n in range(6):
        await remote.respond(KEY, MAIN_BRANCH, [line(f"What now? ({n})")])
    floors = await stored_floors(storage)
    turns: list[list[str]] = []
    seeds: list[int] = []
    for floor in floors:
        if floor.seed is not None:
            seeds.append(floor.seed)
            turns.append([])
        assert floor.speaker is not None
        turns[-1].append(floor.speaker)
    group = GroupSettings(members=("Mira", "Bob"))
    talk = {"Mira": 0.5, "Bob": 0.5}
    again = [
        list(activate(group, talkativeness=talk, user_input=f"What now? ({n})", seed=seed))
        for n, seed in enumerate(seeds)
    ]
    assert again == turns and len(seeds) == 6


def test_seeds_are_drawn_in_their_range() -> None:
    class Fixed:
        def __init__(self, value: float) -> None:
            self.value = value

        def random(self) -> float:
            return self.value

    assert draw_seed(Fixed(0.0)) == 0
    assert draw_seed(Fixed(0.9999999999)) == SEED_RANGE - 1
    assert draw_seed(Fixed(0.5)) == SEED_RANGE // 2


async def test_members_are_added_muted_and_removed_back_to_solo(remote: TavernService) -> None:
    with pytest.raises(NotFoundError, match="has no card named 'Bob' \\(its cards: none"):
        await remote.add_member(KEY, "Bob")
    await two_members(remote)
    with pytest.raises(ConfigurationError, match="Bob already plays"):
        await remote.add_member(KEY, "Bob")
    with pytest.raises(NotFoundError, match="its cards: Bob, Mira"):
        await remote.add_member(KEY, "Zed")
    with pytest.raises(ConfigurationError, match="unknown group strategy 'loud'"):
        await remote.set_group_strategy(KEY, "loud")
    info = await remote.set_group_mode(KEY, "join")
    assert (info.group_mode, info.strategy, info.character) == ("join", "natural", "Mira")
    await remote.mute_member(KEY, "Mira", True)
    info = await remote.remove_member(KEY, "Mira")
    # One member left: a solo session again, playing Bob.
    assert (info.members, info.muted, info.character, info.strategy) == ((), (), "Bob", None)
    with pytest.raises(ConfigurationError, match="only character"):
        await remote.remove_member(KEY, "Bob")
    with pytest.raises(ConfigurationError, match="plays one character"):
        await remote.set_group_mode(KEY, "swap")


async def test_a_solo_session_speaks_its_own_character(
    remote: TavernService, storage: SqlStorage, fake: FakeOpenAIServer
) -> None:
    await remote.import_asset(KEY, "card", "mira.json", card_bytes("Mira", "Mira."))
    fake.script(FakeReply(text="Hello there."))
    view = await remote.speak(KEY, MAIN_BRANCH, "Mira")
    assert (view.floor, view.character, view.text) == (1, "Mira", "Hello there.")
    assert [(f.speaker, f.seed) for f in await stored_floors(storage)] == [(None, None)]


async def test_a_reply_floor_answers_to_the_players_of_its_turn(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    """Who may react on a member's reply (Discord, Telegram): a reply floor holds no input, so
    its players are those of the message its turn answered."""
    await two_members(remote)
    fake.script(FakeReply(text="Aye."), FakeReply(text="Then we wait."), FakeReply(text="Hm."))
    await remote.respond(KEY, MAIN_BRANCH, [line("Bob and Mira, shall we sail?")])
    ann = await remote.floor_speakers(KEY, MAIN_BRANCH, 1)
    assert [s.name for s in ann] == ["Ann"]
    assert await remote.floor_speakers(KEY, MAIN_BRANCH, 2) == ann
    await remote.speak(KEY, MAIN_BRANCH, "Bob")  # no new message: the last players stay
    assert await remote.floor_speakers(KEY, MAIN_BRANCH, 3) == ann
