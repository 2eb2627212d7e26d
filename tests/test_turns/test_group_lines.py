"""Several players on one floor: the prompt names the other players' lines (SillyTavern marks
a message sent as a different persona), so the model can tell them apart with the default
preset."""

from __future__ import annotations

import json

from engine.turns.api import MAIN_BRANCH, Speaker
from engine.turns.service import TavernService
from tests.test_turns.conftest import KEY, line

BOB = Speaker(id="u2", name="Bob")
CAROL = Speaker(id="u3", name="Carol")


async def test_other_players_lines_are_named_in_the_prompt(service: TavernService) -> None:
    await service.respond(
        KEY,
        MAIN_BRANCH,
        [line("I open the door."), line("I keep watch.", BOB), line("I light a torch.", CAROL)],
    )
    prompt = await service.dry_run(KEY, MAIN_BRANCH, "What do we see?")
    contents = [m["content"] for m in prompt["messages"]]
    text = json.dumps(contents)
    # The dry run speaks as the branch's last speaker (Carol): the others' lines carry names.
    assert "Ann: I open the door." in text and "Bob: I keep watch." in text
    assert "I light a torch." in text and "Carol: I light a torch." not in text


async def test_a_single_player_is_never_prefixed(service: TavernService) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("Hello.")])
    prompt = await service.dry_run(KEY, MAIN_BRANCH, "Again.")
    assert "Ann: Hello." not in json.dumps([m["content"] for m in prompt["messages"]])
