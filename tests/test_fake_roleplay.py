"""The front-end test double behaves like the service contract says."""

from __future__ import annotations

from engine.turns.api import SessionKey, Speaker, UserLine
from tests.fakes.roleplay import FakeRoleplayService

KEY = SessionKey(platform="console", realm="local", key="demo")


async def test_swipes_forks_and_variables() -> None:
    service = FakeRoleplayService()
    await service.open_session(KEY, character="Aqua")
    seen: list[str] = []

    async def on_text(text: str) -> None:
        seen.append(text)

    line = UserLine(speaker=Speaker(id="1", name="Ann"), text="hi")
    first = await service.respond(KEY, "main", [line], on_text=on_text)
    assert first.text.startswith("Aqua:") and seen[-1] == first.text and len(seen) > 1
    second = await service.regenerate(KEY, "main")
    assert (second.page, second.pages) == (2, 2) and second.text != first.text
    assert (await service.swipe(KEY, "main", -1)).text == first.text
    await service.set_variable(KEY, "main", "mood", "happy", "branch")
    info = await service.fork(KEY, "main", after_floor=1, name="t1")
    assert info.floors == 1
    assert "mood" not in await service.variables(KEY, "t1")
    assert (await service.variables(KEY, "main"))["mood"] == "happy"
