"""Caches that stay true (issue 19): a change made through one service is what the next turn
in another service on the same PostgreSQL database uses, although that other service has
already played (and so filled its per-process caches)."""

from __future__ import annotations

import pytest

from engine.timeline.values import MAIN_BRANCH
from engine.turns.errors import SessionClosedError
from tests.test_scale.caches_support import KEY, card, line, prompt_text, two_services

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


async def test_a_persona_set_or_cleared_elsewhere_names_the_next_turn(pg_url: str) -> None:
    async with two_services(pg_url) as (first, second):
        await first.open_session(KEY)
        await first.set_persona(KEY, "u1", "Aria", "a wandering bard")
        await first.respond(KEY, MAIN_BRANCH, [line("hello")])
        assert "a wandering bard" in prompt_text(await first.dry_run(KEY, MAIN_BRANCH, "hi"))

        await second.set_persona(KEY, "u1", "Brann", "a retired blacksmith")
        await first.respond(KEY, MAIN_BRANCH, [line("again")])
        (*_, latest) = await first.history(KEY, MAIN_BRANCH)
        assert latest.inputs == (("Brann", "again"),)
        shown = prompt_text(await first.dry_run(KEY, MAIN_BRANCH, "hi"))
        assert "a retired blacksmith" in shown and "a wandering bard" not in shown
        assert await first.persona(KEY, "u1") == ("Brann", "a retired blacksmith")

        await second.clear_persona(KEY, "u1")
        await first.respond(KEY, MAIN_BRANCH, [line("third")])
        (*_, latest) = await first.history(KEY, MAIN_BRANCH)
        assert latest.inputs == (("Ann", "third"),)
        assert await first.persona(KEY, "u1") is None


async def test_a_card_imported_again_elsewhere_is_parsed_again(pg_url: str) -> None:
    async with two_services(pg_url) as (first, second):
        await first.open_session(KEY)
        await first.import_asset(KEY, "card", "Mira.json", card("Mira", "keeps bees"))
        await first.respond(KEY, MAIN_BRANCH, [line("hello")])
        assert "keeps bees" in prompt_text(await first.dry_run(KEY, MAIN_BRANCH, "hi"))

        # Re-imported twice in a row: each version is its own stored update.
        await second.import_asset(KEY, "card", "Mira.json", card("Mira", "tends goats"))
        await second.import_asset(KEY, "card", "Mira.json", card("Mira", "sails ships"))
        shown = prompt_text(await first.dry_run(KEY, MAIN_BRANCH, "hi"))
        assert "sails ships" in shown and "keeps bees" not in shown
        view = await first.respond(KEY, MAIN_BRANCH, [line("again")])
        assert view.character == "Mira"


async def test_a_character_swapped_elsewhere_answers_the_next_turn(pg_url: str) -> None:
    async with two_services(pg_url) as (first, second):
        await first.open_session(KEY)
        await first.import_asset(KEY, "card", "Mira.json", card("Mira", "keeps bees"))
        await first.import_asset(KEY, "card", "Kael.json", card("Kael", "reads stars"), bind=False)
        assert (await first.respond(KEY, MAIN_BRANCH, [line("hello")])).character == "Mira"

        await second.bind_asset(KEY, "card", "Kael")
        assert (await first.respond(KEY, MAIN_BRANCH, [line("again")])).character == "Kael"
        assert "reads stars" in prompt_text(await first.dry_run(KEY, MAIN_BRANCH, "hi"))


async def test_a_session_closed_elsewhere_refuses_the_next_turn(pg_url: str) -> None:
    async with two_services(pg_url) as (first, second):
        await first.open_session(KEY)
        await first.respond(KEY, MAIN_BRANCH, [line("hello")])

        await second.close_session(KEY)
        with pytest.raises(SessionClosedError):
            await first.respond(KEY, MAIN_BRANCH, [line("still there?")])
        with pytest.raises(SessionClosedError):
            await first.regenerate(KEY, MAIN_BRANCH)
        assert (await first.session_info(KEY)).closed

        await second.open_session(KEY)
        assert (await first.respond(KEY, MAIN_BRANCH, [line("back")])).floor == 2


async def test_the_current_branch_switched_elsewhere_is_read_next(pg_url: str) -> None:
    async with two_services(pg_url) as (first, second):
        await first.open_session(KEY)
        await first.respond(KEY, MAIN_BRANCH, [line("hello")])
        assert await first.current_branch(KEY) == MAIN_BRANCH

        await second.fork(KEY, MAIN_BRANCH, after_floor=1, name="side")
        await second.set_current_branch(KEY, "side")
        assert await first.current_branch(KEY) == "side"
        assert (await first.respond(KEY, "side", [line("on the side")])).floor == 2
        await second.set_current_branch(KEY, MAIN_BRANCH)
        assert await first.current_branch(KEY) == MAIN_BRANCH
