"""``reset``, the start-over users get (``/reset`` on every front end): the main branch's
floors are hidden, not deleted, its branch variables go (the deletions logged), and the chat
and global scopes stay. Moved here from the timeline's own reset, which users never ran."""

from __future__ import annotations

from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.test_turns.conftest import KEY, line


async def test_reset_hides_the_floors_and_keeps_the_chat_scope(service: TavernService) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("one")])
    await service.set_variable(KEY, MAIN_BRANCH, "gold", 5, "chat")
    await service.set_variable(KEY, MAIN_BRANCH, "hp", 3, "branch")
    await service.reset(KEY)
    assert await service.history(KEY, MAIN_BRANCH) == []
    assert await service.variables(KEY, MAIN_BRANCH, "branch") == {}
    assert await service.variables(KEY, MAIN_BRANCH, "chat") == {"gold": 5}
    writes = await service.variable_history(KEY, MAIN_BRANCH, "hp")
    assert writes[-1].deleted  # the deletion is kept in the variable's history
    # the old floor is still there, hidden: the next floor comes after it
    assert (await service.respond(KEY, MAIN_BRANCH, [line("fresh")])).floor == 2
    assert [v.floor for v in await service.history(KEY, MAIN_BRANCH)] == [2]
