"""A session's variables as front ends see them: the merged view or one scope at the head of a
branch, explicit writes and deletes, and a variable's history (the store itself is
:mod:`engine.variables`)."""

from __future__ import annotations

from typing import Any

from engine.ports import EventSink
from engine.turns.api import Scope, SessionKey, VariableWrite
from engine.turns.events import emit
from engine.turns.sessions import Sessions
from engine.variables.service import VariableService

__all__ = ["Variables"]


class Variables:
    """Reads and explicit writes of a session's variables, by branch name."""

    def __init__(
        self, sessions: Sessions, variables: VariableService, *, events: EventSink
    ) -> None:
        self._sessions = sessions
        self._variables = variables
        self._events = events

    async def read(
        self, key: SessionKey, branch: str, scope: Scope | None = None
    ) -> dict[str, Any]:
        """The merged view of all five scopes (scope None; the narrowest wins, so ``global``
        shows where no other scope has the name) or one scope, at the head of the branch."""
        _, target = await self._sessions.target(key, branch)
        state = await self._variables.state(target.id)
        return state.merged() if scope is None else dict(state.scope(scope))

    async def set(
        self, key: SessionKey, branch: str, name: str, value: Any, scope: Scope = "chat"
    ) -> None:
        """An explicit write to one scope; a ``floor`` or ``page`` write lands on the latest
        floor and its active page at once (a branch with no floor yet refuses it)."""
        _, target = await self._sessions.target(key, branch)
        await self._variables.set(target.id, scope, name, value, current=True)
        emit(
            self._events,
            "variable.set",
            session=key.key,
            branch=branch,
            scope=scope,
            variable=name,
        )

    async def delete(self, key: SessionKey, branch: str, name: str, scope: Scope = "chat") -> None:
        """An explicit delete in one scope, placed like :meth:`set`."""
        _, target = await self._sessions.target(key, branch)
        await self._variables.delete(target.id, scope, name, current=True)
        emit(
            self._events,
            "variable.deleted",
            session=key.key,
            branch=branch,
            scope=scope,
            variable=name,
        )

    async def history(self, key: SessionKey, branch: str, name: str) -> list[VariableWrite]:
        """Every write of ``name`` visible from the branch, oldest first."""
        _, target = await self._sessions.target(key, branch)
        return [
            VariableWrite(
                scope=e.scope, value=e.value, floor=e.floor, page=e.page, deleted=e.deleted
            )
            for e in await self._variables.history(target.id, name)
        ]
