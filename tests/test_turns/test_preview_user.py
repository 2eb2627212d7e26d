"""``/preview`` renders ``{{user}}`` as the branch's next turn would: the name of the
branch's last speaker (their persona name when they set one), ``User`` before anyone spoke."""

from __future__ import annotations

from engine.turns.api import MAIN_BRANCH, Speaker
from engine.turns.service import TavernService
from tests.test_turns.conftest import KEY, line

BEA = Speaker(id="u2", name="Bea")


async def test_preview_names_the_branchs_last_speaker(service: TavernService) -> None:
    assert await service.preview(KEY, MAIN_BRANCH, "{{user}}") == "User"
    await service.respond(KEY, MAIN_BRANCH, [line("hi")])
    assert await service.preview(KEY, MAIN_BRANCH, "hello {{user}}") == "hello Ann"
    await service.set_persona(KEY, BEA.id, "Beatrix")
    await service.respond(KEY, MAIN_BRANCH, [line("me too", BEA)])
    assert await service.preview(KEY, MAIN_BRANCH, "{{user}}") == "Beatrix"
    await service.fork(KEY, MAIN_BRANCH, after_floor=1, name="side")
    assert await service.preview(KEY, "side", "{{user}}") == "Ann"  # as the branch sees it
