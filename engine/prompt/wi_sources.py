"""What a world info scan reads: the books, the settings, the chat window and extra texts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from engine.formats.worldbook import WorldBook

BookKind = Literal["chat", "persona", "global", "character"]
# Priority when one book is bound in several ways: it is used once, as the first kind here.
BOOK_KINDS: tuple[BookKind, ...] = ("global", "chat", "persona", "character")

STRATEGY_EVENLY = 0
STRATEGY_CHARACTER_FIRST = 1
STRATEGY_GLOBAL_FIRST = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class BookSource:
    """A book bound to the session, and how (card-embedded and character books are
    ``character``; books attached to the chat ``chat``; realm-wide ones ``global``)."""

    book: WorldBook
    kind: BookKind = "character"


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldInfoSettings:
    """SillyTavern's ``world_info_settings`` (same defaults)."""

    scan_depth: int = 2
    min_activations: int = 0
    min_activations_depth_max: int = 0
    budget_percent: int = 25
    budget_cap: int = 0
    include_names: bool = True
    recursive: bool = False
    case_sensitive: bool = False
    match_whole_words: bool = False
    use_group_scoring: bool = False
    character_strategy: int = STRATEGY_CHARACTER_FIRST
    max_recursion_steps: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ScanSources:
    """Texts an entry may opt into scanning (``match_*`` flags) and injected prompts that are
    always scanned (Author's Note with WI scan allowed, persona at depth, ...)."""

    persona_description: str = ""
    character_description: str = ""
    character_personality: str = ""
    character_depth_prompt: str = ""
    scenario: str = ""
    creator_notes: str = ""
    injections: tuple[str, ...] = ()


class ScanWindow(Protocol):
    """The chat as the scan sees it: newest message first, ``"Name: text"`` when names are
    included. Only the requested number of messages is ever read."""

    @property
    def length(self) -> int:
        """How many (non-hidden) messages the chat has in total."""
        ...

    def newest(self, count: int) -> Sequence[str]:
        """Up to ``count`` newest messages, newest first."""
        ...


@dataclass(frozen=True, slots=True)
class ListWindow:
    """A :class:`ScanWindow` over a list already in memory (newest first)."""

    lines: Sequence[str]

    @property
    def length(self) -> int:
        """The number of lines."""
        return len(self.lines)

    def newest(self, count: int) -> Sequence[str]:
        """The first ``count`` lines."""
        return self.lines[:count]
