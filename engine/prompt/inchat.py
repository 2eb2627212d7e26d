"""In-chat injections: prompts placed inside the chat history at a depth.

Per depth, preset prompts are grouped by ``injection_order``; each order yields up to one
message per role, and the order-100 group also carries the extension prompts at that depth
(character depth prompt, Author's Note, persona, world info @depth), sorted by their keys.
The result per depth is chronological: lower order first; within an order assistant, user,
then system (closest to the end), exactly as SillyTavern emits them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.prompt.ir import IRMessage, Role, Section, Source, SourceKind

DEFAULT_ORDER = 100
_ROLES_CHRONOLOGICAL: tuple[Role, ...] = ("assistant", "user", "system")


@dataclass(frozen=True, slots=True, kw_only=True)
class InChatPrompt:
    """A preset prompt with an absolute (in-chat) position, already macro-rendered."""

    identifier: str
    depth: int
    order: int
    role: Role
    content: str
    sections: tuple[Section, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtensionPrompt:
    """An extension prompt at a depth (``key`` decides the order inside its message)."""

    key: str
    depth: int
    role: Role
    content: str
    sections: tuple[Section, ...]


def build_injections(
    prompts: Sequence[InChatPrompt], extensions: Sequence[ExtensionPrompt]
) -> dict[int, list[IRMessage]]:
    """Depth -> the messages inserted there, in chronological order."""
    depths = {p.depth for p in prompts if p.content} | {e.depth for e in extensions if e.content}
    out: dict[int, list[IRMessage]] = {}
    for depth in sorted(depths):
        here = [p for p in prompts if p.depth == depth and p.content]
        ext = sorted(
            (e for e in extensions if e.depth == depth and e.content), key=lambda e: e.key
        )
        orders = sorted({p.order for p in here} | {DEFAULT_ORDER})
        messages: list[IRMessage] = []
        for order in orders:
            for role in _ROLES_CHRONOLOGICAL:
                mine = [p for p in here if p.order == order and p.role == role]
                extras = [e for e in ext if e.role == role] if order == DEFAULT_ORDER else []
                prompt_text = "\n".join(p.content for p in mine)
                ext_text = "\n".join(e.content.strip() for e in extras)
                parts = [t.strip() for t in (prompt_text, ext_text) if t]
                content = "\n".join(p for p in parts if p)
                if not content:
                    continue
                sections = tuple(s for p in mine for s in p.sections) + tuple(
                    s for e in extras for s in e.sections
                )
                ident = mine[0].identifier if mine else extras[0].key
                messages.append(
                    IRMessage(role=role, content=content, sections=sections, identifier=ident)
                )
        if messages:
            out[depth] = messages
    return out


def section(kind: SourceKind, ref: str, text: str) -> Section:
    """Shorthand for a :class:`Section`."""
    return Section(source=Source(kind=kind, ref=ref), text=text)
