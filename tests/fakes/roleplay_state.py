"""What :class:`tests.fakes.roleplay.FakeRoleplayService` stores: sessions with their
branches, floors and pages, kept in plain dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.prompt.inputs import AuthorNote
from engine.timeline.values import SessionSettings
from engine.turns.api import MAIN_BRANCH, PlatformRef, SessionKey, UserLine


@dataclass
class FakeFloor:
    lines: list[UserLine]
    pages: list[str] = field(default_factory=list)
    page_vars: list[dict[str, Any]] = field(default_factory=list)
    active: int = 0
    hidden: bool = False
    hidden_pages: set[int] = field(default_factory=set)
    """Indexes into ``pages`` of the pages whose message was deleted."""


@dataclass
class FakeBranch:
    name: str
    parent: str | None
    fork_floor: int | None
    floors: list[FakeFloor] = field(default_factory=list)
    vars: dict[str, Any] = field(default_factory=dict)


@dataclass
class FakeSession:
    key: SessionKey
    character: str | None
    branches: dict[str, FakeBranch] = field(default_factory=dict)
    chat_vars: dict[str, Any] = field(default_factory=dict)
    links: dict[str, PlatformRef] = field(default_factory=dict)
    preset: str | None = None
    worldbooks: list[str] = field(default_factory=list)
    regex_sets: list[str] = field(default_factory=list)
    settings: SessionSettings = field(default_factory=SessionSettings)
    """The session's options, kept as the engine keeps them (see :mod:`engine.turns.options`)."""
    current_branch: str = MAIN_BRANCH
    closed: bool = False
    note: AuthorNote | None = None

    @property
    def tools_global_writes(self) -> bool:
        """Whether the model's tools may write global variables in this session."""
        return self.settings.extra.get("tools_global_writes") is True
