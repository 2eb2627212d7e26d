"""The fake service's continue, edits, hiding, page texts and impersonation (a mixin of
:class:`tests.fakes.roleplay.FakeRoleplayService`, kept apart to keep that module small).

The calls behave as the engine's do, in the fake's terms: an edited input is answered on a new
branch ``<branch>-edit-<floor>``, an edited reply is a new active page of the latest floor only,
a hidden floor is kept and left out of the history, and impersonation commits nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from engine.errors import InvalidTransitionError, NotFoundError
from engine.turns.api import BranchInfo, OnText, ReplyView, SessionKey, UserLine
from tests.fakes.roleplay_state import FakeBranch, FakeFloor, FakeSession


class _Host(Protocol):
    """What the mixin uses of the fake it is mixed into."""

    calls: list[tuple[str, Any]]
    fail_next: bool

    def _session(self, key: SessionKey) -> FakeSession: ...
    def _branch(self, key: SessionKey, branch: str) -> FakeBranch: ...
    def _lineage(self, session: FakeSession, branch: FakeBranch) -> list[FakeFloor]: ...
    def _view(self, session: FakeSession, branch: FakeBranch) -> ReplyView: ...
    def _refuse_closed(self, session: FakeSession) -> None: ...
    async def _generate(
        self, session: FakeSession, lines: Sequence[UserLine], page: int, on_text: OnText | None
    ) -> str: ...
    async def respond(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
    ) -> ReplyView: ...
    async def fork(
        self, key: SessionKey, branch: str, *, after_floor: int | None, name: str
    ) -> BranchInfo: ...


def _floor(host: _Host, key: SessionKey, branch: str, floor: int) -> FakeFloor:
    floors = host._lineage(host._session(key), host._branch(key, branch))
    if not 0 < floor <= len(floors):
        raise NotFoundError(f"branch {branch!r} has no floor {floor}")
    return floors[floor - 1]


class FakeTurnEdits:
    """Continue, edit, hide, page texts and impersonate for the fake service."""

    async def continue_reply(
        self: _Host, key: SessionKey, branch: str, *, on_text: OnText | None = None
    ) -> ReplyView:
        self.calls.append(("continue_reply", (key, branch)))
        session = self._session(key)
        self._refuse_closed(session)
        target = self._branch(key, branch)
        floors = self._lineage(session, target)
        if not floors or not floors[-1].pages:
            raise InvalidTransitionError("nothing to continue yet")
        floor = floors[-1]
        before = floor.pages[floor.active]

        async def shown(text: str) -> None:
            if on_text is not None:
                await on_text(f"{before} {text}")

        more = await self._generate(session, floor.lines, len(floor.pages) + 1, shown)
        floor.pages.append(f"{before} {more}")
        floor.page_vars.append({})
        floor.active = len(floor.pages) - 1
        return self._view(session, target)

    async def edit_and_regenerate(
        self: _Host,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
    ) -> ReplyView:
        self.calls.append(("edit_and_regenerate", (key, branch, tuple(lines))))
        session = self._session(key)
        floors = self._lineage(session, self._branch(key, branch))
        if not floors or not floors[-1].pages:
            raise InvalidTransitionError(f"branch {branch!r} has no answered message to edit")
        name, n = f"{branch}-edit-{len(floors)}", 1
        while name in session.branches:
            n += 1
            name = f"{branch}-edit-{len(floors)}-{n}"
        await self.fork(key, branch, after_floor=len(floors) - 1, name=name)
        return await self.respond(key, name, lines, on_text=on_text)

    async def edit_reply(
        self: _Host, key: SessionKey, branch: str, floor: int, text: str
    ) -> ReplyView:
        self.calls.append(("edit_reply", (key, branch, floor, text)))
        session = self._session(key)
        target = self._branch(key, branch)
        floors = self._lineage(session, target)
        if floor != len(floors):
            raise InvalidTransitionError(
                f"only the latest floor's reply can be edited (floor {len(floors)} on branch "
                f"{branch!r}; floor {floor} is older)"
            )
        found = floors[-1]
        found.pages.append(text)
        found.page_vars.append(dict(found.page_vars[found.active]) if found.page_vars else {})
        found.active = len(found.pages) - 1
        return self._view(session, target)

    async def hide_floor(self: _Host, key: SessionKey, branch: str, floor: int) -> None:
        self.calls.append(("hide_floor", (key, branch, floor)))
        found = _floor(self, key, branch, floor)
        if found not in self._branch(key, branch).floors:
            raise InvalidTransitionError(
                f"floor {floor} comes from the branch {branch!r} forked from; only its own "
                "floors can be hidden here"
            )
        if found.hidden:
            raise InvalidTransitionError(f"floor {floor} of branch {branch!r} is already hidden")
        found.hidden = True

    async def page_texts(self: _Host, key: SessionKey, branch: str, floor: int) -> list[str]:
        return list(_floor(self, key, branch, floor).pages)

    async def impersonate(
        self: _Host,
        key: SessionKey,
        branch: str,
        *,
        user_name: str | None = None,
        on_text: OnText | None = None,
    ) -> str:
        self.calls.append(("impersonate", (key, branch, user_name)))
        session = self._session(key)
        self._refuse_closed(session)
        self._branch(key, branch)
        name = user_name or "User"
        if self.fail_next:
            self.fail_next = False
            raise InvalidTransitionError("the model failed (scripted)")
        text = f"{name} steps closer."
        if on_text is not None:
            await on_text(text)
        return text
