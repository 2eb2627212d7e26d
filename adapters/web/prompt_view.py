"""What the prompt inspector shows: the dry run of a session's next reply (the engine's own
``dry_run``, as the console's ``/dryrun`` and ``tavernbot prompt dry-run`` print it) laid out as
sections with their sources, the world-info entries that fired with the key that fired them,
the memory block and the token budget.

The engine reports each activated entry as ``book.uid`` with what fired it (``fired_by``: the
key that matched, or constant, forced, sticky). Data written before the engine recorded it has
none; for those the key is guessed here by matching the entry's own keys (with the entry's case
and whole-word settings, by the engine's ``match_key``) against the chat lines in the prompt.

The same view reads a page's stored itemization (:mod:`engine.prompt.itemize`, the dry-run
object's shape plus each message's token count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from engine.formats.worldbook import WorldEntry
from engine.prompt.dry_run_text import dry_run_text, tokens_text
from engine.prompt.wi_match import Haystack, MatchOptions, match_key
from engine.prompt.wi_sources import BookSource

DEFAULT_PROBE: Final = "(the next message)"
"""The message a dry run assembles for when the inspector is opened without one."""
MAX_PROBE_CHARS: Final = 4000
"""Longest message the inspector assembles a prompt for."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptMessage:
    """One message of the assembled prompt."""

    index: int
    role: str
    name: str
    identifier: str
    content: str
    sources: tuple[str, ...]
    is_memory: bool
    is_world: bool
    tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldActivation:
    """One world-info entry that fired."""

    key: str
    book: str
    comment: str
    position: str
    fired_by: str
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptView:
    """The whole inspector page's data."""

    messages: tuple[PromptMessage, ...]
    world: tuple[WorldActivation, ...]
    memory: tuple[PromptMessage, ...]
    budget: Mapping[str, Any]
    budget_text: str
    warnings: tuple[str, ...]
    text: str
    """The readable dry run (what copy to clipboard copies)."""
    truncated: bool = False
    """A stored itemization whose texts were cut to fit its bound."""


def _source(item: Mapping[str, Any]) -> str:
    return f"{item['kind']}:{item['ref']}" if item.get("ref") else str(item["kind"])


def _entries(books: Sequence[BookSource]) -> dict[tuple[str, int], WorldEntry]:
    return {
        (source.book.name, entry.uid): entry for source in books for entry in source.book.entries
    }


def fired_by(entry: WorldEntry | None, scanned: str) -> str:
    """The key of ``entry`` that matches ``scanned`` (``constant`` for a constant entry, ``""``
    when none is found: forced, sticky, or scanned outside the lines the prompt shows)."""
    if entry is None:
        return ""
    if entry.constant:
        return "constant"
    hay = Haystack(scanned)
    options = MatchOptions(
        case_sensitive=bool(entry.case_sensitive),
        match_whole_words=bool(entry.match_whole_words),
    )
    for key in entry.keys:
        if match_key(hay, key, options):
            return key
    return ""


def prompt_view(data: Mapping[str, Any], books: Sequence[BookSource] = ()) -> PromptView:
    """The inspector's view of the dry-run object ``data`` (``messages``, ``world_info``,
    ``budget``, ``warnings``); ``books`` are the session's world books, to name fired keys."""
    messages = []
    for index, raw in enumerate(data["messages"]):
        sources = tuple(_source(s) for s in raw.get("sources", ()))
        messages.append(
            PromptMessage(
                index=index,
                role=str(raw["role"]),
                name=str(raw.get("name") or ""),
                identifier=str(raw.get("identifier") or ""),
                content=str(raw["content"]),
                sources=sources,
                is_memory=any(s.startswith("memory") for s in sources),
                is_world=any(s.startswith("world") for s in sources),
                tokens=raw.get("tokens"),
            )
        )
    scanned = "\n".join(
        m.content for m in messages if any(s.startswith("history") for s in m.sources)
    )
    entries = _entries(books)
    world = tuple(
        WorldActivation(
            key=str(item["key"]),
            book=str(item["book"]),
            comment=str(item.get("comment") or ""),
            position=str(item.get("position") or ""),
            fired_by=str(item.get("fired_by") or "")
            or fired_by(entries.get((str(item["book"]), int(item["uid"]))), scanned),
            content=str(item.get("content") or ""),
        )
        for item in data["world_info"]
    )
    return PromptView(
        messages=tuple(messages),
        world=world,
        memory=tuple(m for m in messages if m.is_memory),
        budget=dict(data["budget"]),
        budget_text=tokens_text(data["budget"]),
        warnings=tuple(str(w) for w in data.get("warnings", ())),
        text=dry_run_text(data),
        truncated=bool(data.get("truncated")),
    )
