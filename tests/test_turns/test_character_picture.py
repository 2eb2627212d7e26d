"""``character_picture``: the picture a PNG card came with, for the front ends' avatars (issue
17). A JSON card, a name without a card and a card of another realm have none; a re-imported
card gives its new picture; decoded pictures are kept for at most ``PICTURE_CACHE_SIZE`` cards."""

from __future__ import annotations

import json

from engine.turns.api import SessionKey
from engine.turns.assets import PICTURE_CACHE_SIZE
from engine.turns.service import TavernService
from tests.fakes.pictures import picture, png_card
from tests.test_turns.conftest import KEY

RED = picture((255, 0, 0, 255))
BLUE = picture((0, 0, 255, 255))


async def test_a_png_card_gives_back_its_picture_and_a_json_card_none(
    service: TavernService,
) -> None:
    await service.import_asset(KEY, "card", "mira.png", png_card("Mira", "Keeper.", RED))
    json_card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Finn"}}
    await service.import_asset(KEY, "card", "finn.json", json.dumps(json_card).encode())

    assert await service.character_picture(KEY, "Mira") == RED
    assert await service.character_picture(KEY, "Finn") is None
    assert await service.character_picture(KEY, "Narrator") is None
    # Another realm's session does not see this realm's cards.
    elsewhere = SessionKey(platform="console", realm="elsewhere", key="x")
    await service.open_session(elsewhere)
    assert await service.character_picture(elsewhere, "Mira") is None


async def test_a_reimported_card_gives_its_new_picture(service: TavernService) -> None:
    await service.import_asset(KEY, "card", "mira.png", png_card("Mira", "Keeper.", RED))
    assert await service.character_picture(KEY, "Mira") == RED
    await service.import_asset(KEY, "card", "mira.png", png_card("Mira", "Keeper.", BLUE))
    assert await service.character_picture(KEY, "Mira") == BLUE


async def test_decoded_pictures_are_kept_for_at_most_the_cache_size(
    service: TavernService,
) -> None:
    names = [f"C{n}" for n in range(PICTURE_CACHE_SIZE + 2)]
    for n, name in enumerate(names):
        image = picture((n, 0, 0, 255))
        await service.import_asset(KEY, "card", f"{name}.png", png_card(name, "x", image))
        assert await service.character_picture(KEY, name) == image
    cache = service.parts.assets._pictures
    assert len(cache) == PICTURE_CACHE_SIZE
    # The oldest was dropped, and is decoded again when asked.
    assert await service.character_picture(KEY, names[0]) == picture((0, 0, 0, 255))
