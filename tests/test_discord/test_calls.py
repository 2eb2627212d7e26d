"""Calls: which character a user's Discord reply calls, and the limits on what is kept."""

from __future__ import annotations

from typing import cast

from adapters.discord.calls import CALLED_LOOKBACK_FLOORS, MAX_CALLS, Calls
from adapters.discord.convert import Place
from engine.turns.api import PlatformRef, ReplyView, RoleplayService, SessionKey, Speaker, UserLine

KEY = SessionKey(platform="discord", realm="1", key="2")
ANN = Speaker(id="7", name="Ann")


class _Links:
    """resolve_message and history of a branch with ``floors`` floors, Mira on floor 1."""

    def __init__(self, floors: int) -> None:
        self.floors = floors
        self.limits: list[int] = []

    async def resolve_message(self, key: SessionKey, ref: str) -> PlatformRef | None:
        if ref == "900":
            return PlatformRef(branch="main", floor=1, page=1, role="assistant")
        if ref == "901":
            return PlatformRef(branch="main", floor=1, page=None, role="user")
        return None

    async def history(self, key: SessionKey, branch: str, *, limit: int = 50) -> list[ReplyView]:
        self.limits.append(limit)
        views = [
            ReplyView(
                session=key,
                branch=branch,
                floor=n,
                page=1,
                pages=1,
                text="…",
                character="Mira" if n == 1 else "Finn",
            )
            for n in range(1, self.floors + 1)
        ]
        return views[-limit:]


def _calls(floors: int) -> tuple[Calls, _Links]:
    links = _Links(floors)
    return Calls(cast(RoleplayService, links), {}), links


async def test_a_reply_found_only_in_the_engine_is_looked_up_within_the_lookback() -> None:
    place = Place(key=KEY, branch="main", channel_id=2)
    near, links = _calls(CALLED_LOOKBACK_FLOORS)
    assert await near.member_of(place, 900) == "Mira"
    assert links.limits == [CALLED_LOOKBACK_FLOORS]
    far, _ = _calls(CALLED_LOOKBACK_FLOORS + 1)  # floor 1 is beyond the lookback now
    assert await far.member_of(place, 900) is None
    assert await near.member_of(place, 901) is None  # a user's message calls nobody
    assert await near.member_of(place, 902) is None  # nor does an unknown one


def test_calls_are_used_once_in_order_and_at_most_max_calls_are_kept() -> None:
    calls, _ = _calls(1)
    lines = [UserLine(speaker=ANN, text=str(n), ref=str(n)) for n in range(3)]
    calls.note("0", "Finn")
    calls.note("1", "Mira")
    calls.note("2", "Finn")
    assert calls.take(lines) == ("Finn", "Mira")
    assert calls.take(lines) == ()
    for n in range(MAX_CALLS + 1):
        calls.note(str(n), "Mira")
    first, last = (UserLine(speaker=ANN, text="x", ref=r) for r in ("0", str(MAX_CALLS)))
    assert calls.take([first]) == () and calls.take([last]) == ("Mira",)
