"""Issue 12's must-show: one session's pathological assets do not stall another session.

Two sessions of one :class:`TavernService` (real SQLite storage, the offline model) play at the
same time. The attacker's session carries 24 backtracking regex scripts, a world book of
backtracking regex keys, a card with deeply nested ``{{if}}`` blocks, and sends a message just
under the input limit that makes every one of those patterns backtrack. The bystander's session
is plain.

The proof is by order of events, never by wall-clock time: the attacker's assembly is held
inside its worker thread until the bystander's reply has come back, and then runs its real
pathological work to the end. Were the assembly on the event loop (as before issue 12), holding
it would hold every session, and the bystander could only answer after the attacker's assembly
finished.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import engine.turns.context as context
import engine.turns.turn_prompt as turn_prompt
from adapters.storage import SqlStorage
from engine.prompt.regex_budget import EXHAUSTED
from engine.turns.api import MAIN_BRANCH, SessionKey, Speaker, UserLine
from engine.turns.service import TavernService
from engine.turns.turns import MAX_INPUT_CHARS
from tests.test_turns.conftest import Recorder, offline_service

pytestmark = pytest.mark.timeout(240)

ATTACKER = SessionKey(platform="telegram", realm="chat-a", key="chat-a")
BYSTANDER = SessionKey(platform="telegram", realm="chat-b", key="chat-b")
MALLORY = Speaker(id="m1", name="Mallory")
BEA = Speaker(id="b1", name="Bea")
EVIL = "/(a|aa)+$/"
GIANT = "a" * (MAX_INPUT_CHARS - 10) + "!"
NESTING = 200
HOLD_S = 60.0
"""How long the attacker's assembly waits for the bystander's reply (it never should)."""


def attack_scripts() -> bytes:
    # Half run when a message is stored, half on every chat line of every prompt.
    scripts = [
        {
            "scriptName": f"evil {i}",
            "findRegex": EVIL,
            "replaceString": "X",
            "placement": [1, 2],
            "promptOnly": i % 2 == 1,
        }
        for i in range(24)
    ]
    return json.dumps(scripts).encode()


def attack_book() -> bytes:
    entries = {
        str(i): {"uid": i, "key": [f"/(a|aa)+(z{i})?$/"], "content": f"trap {i}"}
        for i in range(200)
    }
    return json.dumps({"entries": entries}).encode()


def attack_card() -> bytes:
    nested = "{{if 1}}" * NESTING + "deep" + "{{/if}}" * NESTING
    data = {"name": "Trap", "description": nested, "first_mes": ""}
    return json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": data}).encode()


class Held:
    """Wraps a step of a turn: the attacker's call waits at its start until released, and
    records when it finished; the bystander's calls run untouched."""

    def __init__(self, real: Callable[..., Any], attacker: Callable[..., bool]) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self.released_in_time: list[bool] = []
        self.real = real
        self.attacker = attacker

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.attacker(*args, **kwargs):
            return self.real(*args, **kwargs)
        self.started.set()
        self.released_in_time.append(self.release.wait(HOLD_S))
        try:
            return self.real(*args, **kwargs)
        finally:
            self.finished.set()


@pytest.fixture
async def two(storage: SqlStorage, events: Recorder) -> AsyncIterator[TavernService]:
    service = offline_service(storage, events)
    await service.start()
    await service.open_session(ATTACKER)
    await service.open_session(BYSTANDER)
    await service.import_asset(ATTACKER, "card", "trap.json", attack_card())
    await service.import_asset(ATTACKER, "regex", "evil.json", attack_scripts())
    await service.import_asset(ATTACKER, "worldbook", "trap.json", attack_book())
    yield service
    await service.aclose()


async def _page_meta(service: TavernService, key: SessionKey) -> dict[str, Any]:
    ids = await service.parts.sessions.ids(key)
    branch = await service.parts.sessions.branch(ids.session_id, MAIN_BRANCH)
    async with service.storage.unit_of_work() as uow:
        floor = await uow.floors.latest(branch.id)
        assert floor is not None
        pages = await uow.pages.of_floors([floor.id])
    return dict(pages[-1].meta)


async def test_an_attackers_assembly_does_not_hold_another_sessions_reply(
    two: TavernService, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = Held(turn_prompt.assemble, lambda inp, **_: inp.character.name == "Trap")
    monkeypatch.setattr(turn_prompt, "assemble", held)
    async with asyncio.TaskGroup() as group:
        attack = group.create_task(
            two.respond(ATTACKER, MAIN_BRANCH, [UserLine(speaker=MALLORY, text=GIANT)])
        )
        assert await asyncio.to_thread(held.started.wait, HOLD_S)
        reply = await two.respond(BYSTANDER, MAIN_BRANCH, [UserLine(speaker=BEA, text="hello")])
        attacker_still_assembling = not held.finished.is_set()
        held.release.set()
    assert reply.floor == 1 and reply.text
    assert attacker_still_assembling, "the bystander's reply waited for the attacker's assembly"
    assert held.released_in_time == [True]

    # The attacker's turn ran its pathological work, was cut at the budget and committed.
    view = attack.result()
    assert view.floor == 1 and view.text
    meta = await _page_meta(two, ATTACKER)
    exhausted = [w for w in meta.get("warnings", []) if w.startswith(EXHAUSTED)]
    assert len(exhausted) == 1, meta.get("warnings")
    assert "TURN_REGEX_BUDGET_S" in exhausted[0] and "script 'evil" in exhausted[0]

    # Not a broken session: the attacker's next turn works (and is bounded the same way).
    held.release.set()
    again = await two.respond(ATTACKER, MAIN_BRANCH, [UserLine(speaker=MALLORY, text="hi")])
    assert again.floor == 2 and again.text
    assert held.released_in_time == [True, True]


async def test_a_dry_run_reports_the_spent_budget(two: TavernService) -> None:
    found = await two.dry_run(ATTACKER, MAIN_BRANCH, GIANT)
    exhausted = [w for w in found["warnings"] if w.startswith(EXHAUSTED)]
    # As in a turn, the input's store run (the evil user-input scripts) draws on the budget
    # first (issue 15), and the world-info keys that found it spent are cut.
    assert len(exhausted) == 1 and "script 'evil" in exhausted[0], exhausted
    assert "world-info key test" in exhausted[0], exhausted
    assert found["world_info"] == []  # no trap key matched: they were cut, not matched


async def test_the_attackers_input_regex_run_holds_no_unit_of_work(
    two: TavernService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store run of the input's scripts happens before the floor is opened, with no
    transaction open: on SQLite one writer lock serves every session, so a run held inside a
    unit of work would keep the bystander from storing its own turn."""
    held = Held(context.stored_input, lambda message, *_: message.raw == GIANT)
    monkeypatch.setattr(context, "stored_input", held)
    async with asyncio.TaskGroup() as group:
        attack = group.create_task(
            two.respond(ATTACKER, MAIN_BRANCH, [UserLine(speaker=MALLORY, text=GIANT)])
        )
        assert await asyncio.to_thread(held.started.wait, HOLD_S)
        reply = await two.respond(BYSTANDER, MAIN_BRANCH, [UserLine(speaker=BEA, text="hello")])
        attacker_still_storing = not held.finished.is_set()
        held.release.set()
    assert reply.floor == 1 and reply.text
    assert attacker_still_storing, "the bystander's turn waited for the attacker's store run"
    assert held.released_in_time == [True]
    assert (await attack).floor == 1
