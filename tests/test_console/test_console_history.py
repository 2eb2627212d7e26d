"""``/history`` after platform deletions, on the real engine and on the front-end double: both
leave hidden floors out (counting them against the limit) and show a floor whose active page
was hidden without its text."""

from __future__ import annotations

import io
import json

import pytest

from adapters.console.frontend import ConsoleFrontend
from engine.errors import LimitExceededError
from engine.turns.api import MAIN_BRANCH, PlatformRef, RoleplayService, SessionKey
from engine.turns.service import TavernService
from tests.fakes.roleplay import FakeRoleplayService

pytestmark = pytest.mark.timeout(60)
KEY = SessionKey(platform="console", realm="local", key="history-test")


async def _hidden_history(
    service: RoleplayService,
) -> tuple[list[tuple[int, int, int, bool]], ...]:
    """Play four floors, regenerate the last, then delete floor 2's input and the message
    showing floor 4's active page. Returns what ``/history`` shows as (floor, page, pages,
    has text), and the floors ``history`` gives with limits 3 and 1."""
    await service.open_session(KEY)
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, user="Ann", out=out, jsonl=True)
    for line in ("one", "two", "three", "four", "/regen"):
        assert await console.handle_line(line)
    deleted = {
        "input-2": PlatformRef(branch=MAIN_BRANCH, floor=2, page=None, role="user"),
        "reply-4-2": PlatformRef(branch=MAIN_BRANCH, floor=4, page=2, role="assistant"),
    }
    for ref, where in deleted.items():
        await service.link_message(KEY, ref, where)
        await service.hide_message(KEY, ref)
    start = len(out.getvalue().splitlines())
    assert await console.handle_line("/history")
    shown = []
    for row in out.getvalue().splitlines()[start:]:
        item = json.loads(row)
        head, _, text = item["message"].partition("› ")
        floor, pages = head.removeprefix("#").split(" ‹")
        page, count = pages.split("/")
        shown.append((int(floor), int(page), int(count), bool(text), item["hidden"]))
    limited = tuple(
        [(v.floor, v.page, v.pages, bool(v.text or v.character)) for v in views]
        for views in [
            await service.history(KEY, MAIN_BRANCH, limit=3),
            await service.history(KEY, MAIN_BRANCH, limit=1),
        ]
    )
    return (shown, *limited)


async def test_hidden_floors_and_pages_in_history_on_the_engine_and_the_double(
    offline_engine: TavernService,
) -> None:
    real = await _hidden_history(offline_engine)
    with pytest.raises(LimitExceededError, match="outside 1"):
        await offline_engine.history(KEY, MAIN_BRANCH, limit=0)
    shown, last_three, last_one = real
    # /history marks floor 2 hidden (kept, out of the prompts); floor 4 keeps its place and
    # page count, without the hidden page's text.
    assert shown == [
        (1, 1, 1, True, False),
        (2, 1, 1, True, True),
        (3, 1, 1, True, False),
        (4, 2, 2, False, False),
    ]
    # The limit takes the newest floors first, hidden ones included, then leaves those out.
    assert last_three == [(3, 1, 1, True), (4, 2, 2, False)]
    assert last_one == [(4, 2, 2, False)]
    fake = FakeRoleplayService()
    assert await _hidden_history(fake) == real
    with pytest.raises(LimitExceededError, match="outside 1"):
        await fake.history(KEY, MAIN_BRANCH, limit=0)
