"""The Prompt IR: the ordered chat messages sent to the model, each carrying where its text came
from. Every assembly mode (compat_strict, compat_plus, native) produces this same structure.

A message is made of sections; each section names its source (a preset prompt, a world entry,
a history floor, a memory item, ...) so a dry run can show why every line is in the prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from engine.formats.preset import Role as Role  # re-exported: a message's chat role

Mode = Literal["compat_strict", "compat_plus", "native"]
MODES: tuple[Mode, ...] = get_args(Mode)

SourceKind = Literal[
    "preset",  # a preset prompt (ref = identifier)
    "card",  # a character card field (ref = field name)
    "persona",  # the user's persona description
    "world",  # a world info entry (ref = "<book>.<uid>")
    "history",  # a chat message (ref = floor number, or "input" for the new message)
    "example",  # a dialogue example block (ref = block index)
    "author_note",  # the Author's Note
    "memory",  # a memory item (ref = its id)
    "instance",  # another model instance's contribution (ref = slot name)
    "utility",  # a preset utility prompt (new chat, nudges; ref = its key)
    "graph",  # a native prompt-graph node (ref = node id)
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """Where a piece of prompt text came from."""

    kind: SourceKind
    ref: str = ""

    def __str__(self) -> str:
        return f"{self.kind}:{self.ref}" if self.ref else self.kind

    def to_json(self) -> dict[str, str]:
        """``{"kind", "ref"}``."""
        return {"kind": self.kind, "ref": self.ref}


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    """A piece of a message's content and its source."""

    source: Source
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class IRMessage:
    """One chat message. ``content`` is the text sent; ``sections`` its parts with sources;
    ``identifier`` the assembly slot it filled (``main``, ``chatHistory-3``, ...)."""

    role: Role
    content: str
    sections: tuple[Section, ...] = ()
    name: str | None = None
    identifier: str = ""
    tokens: int = 0

    @property
    def sources(self) -> tuple[Source, ...]:
        """The distinct sources of this message, in order."""
        seen: dict[str, Source] = {}
        for section in self.sections:
            seen.setdefault(str(section.source), section.source)
        return tuple(seen.values())

    def to_chat(self) -> dict[str, str]:
        """The OpenAI-style message ``{"role", "content"[, "name"]}``."""
        out = {"role": self.role, "content": self.content}
        if self.name:
            out["name"] = self.name
        return out

    def to_json(self) -> dict[str, Any]:
        """The message with its sources (for dry runs)."""
        out: dict[str, Any] = {
            "role": self.role,
            "content": self.content,
            "sources": [s.to_json() for s in self.sources],
        }
        if self.name:
            out["name"] = self.name
        if self.identifier:
            out["identifier"] = self.identifier
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetReport:
    """How the context window was spent. ``available`` = context − response − priming."""

    max_context: int
    response_tokens: int
    priming_tokens: int
    available: int
    fixed_tokens: int = 0
    history_tokens: int = 0
    history_messages: int = 0
    history_pulled: int = 0
    history_truncated: bool = False
    injection_messages: int = 0
    example_tokens: int = 0
    example_blocks: int = 0
    example_blocks_total: int = 0
    world_info_budget: int = 0
    world_info_tokens: int = 0
    total_tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        """Plain JSON."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptIR:
    """An assembled prompt: messages in order, plus what was decided on the way."""

    mode: Mode
    messages: tuple[IRMessage, ...]
    budget: BudgetReport
    warnings: tuple[str, ...] = ()
    prefill: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_chat(self) -> list[dict[str, str]]:
        """The messages as an OpenAI-style list."""
        return [m.to_chat() for m in self.messages]
