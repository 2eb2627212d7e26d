"""Branch floor counts read "1 floor", "2 floors" (issue 16: "1 floors" was printed)."""

from __future__ import annotations

import io

from adapters.console.frontend import ConsoleFrontend
from adapters.telegram.keyboards import branches_keyboard
from engine.turns.api import BranchInfo, SessionKey
from tests.fakes.roleplay import FullFakeRoleplayService

KEY = SessionKey(platform="console", realm="local", key="counted")


def test_the_count_agrees_with_its_number() -> None:
    def info(n: int) -> BranchInfo:
        return BranchInfo(name="main", parent=None, fork_floor=None, floors=n)

    assert [info(n).floors_text for n in (0, 1, 2)] == ["0 floors", "1 floor", "2 floors"]


async def test_the_console_says_one_floor() -> None:
    service = FullFakeRoleplayService()
    await service.open_session(KEY)
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, user="Ann", out=out)
    assert await console.handle_line("hello")
    out.truncate(0)
    out.seek(0)
    for line in ("/branches", "/info"):
        assert await console.handle_line(line)
    text = out.getvalue()
    assert "1 floors" not in text
    assert text.count("(1 floor)") == 2, text


def test_the_telegram_branch_buttons_say_one_floor() -> None:
    one = BranchInfo(name="main", parent=None, fork_floor=None, floors=1)
    two = BranchInfo(name="alt", parent="main", fork_floor=1, floors=2)
    board = branches_keyboard([one, two], "main")
    labels = [row[0].text for row in board.inline_keyboard]
    assert labels == ["✅ main (1 floor)", "alt (2 floors)"]
