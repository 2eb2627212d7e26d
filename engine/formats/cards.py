"""SillyTavern character cards: V1, V2 and V3, as JSON or as PNG with embedded metadata.

A card is read into :class:`CharacterCard`, a neutral engine value. The original JSON mapping is
kept in ``raw`` so that an export writes back every field the engine does not understand (ST's own
rule: unknown keys in ``data``, ``data.extensions`` and the book must survive).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

CardSpec = Literal["chara_card_v1", "chara_card_v2", "chara_card_v3"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DepthPrompt:
    """The card's "Character's Note": text injected into the chat at ``depth`` with ``role``."""

    text: str
    depth: int
    role: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CharacterCard:
    """One character card. Mappings hold plain JSON values and must be treated as read-only."""

    name: str
    description: str = ""
    personality: str = ""
    scenario: str = ""
    first_mes: str = ""
    mes_example: str = ""
    creator_notes: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""
    alternate_greetings: tuple[str, ...] = ()
    group_only_greetings: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    creator: str = ""
    character_version: str = ""
    depth_prompt: DepthPrompt | None = None
    talkativeness: float = 0.5
    character_book: Mapping[str, object] | None = None
    extensions: Mapping[str, object]
    spec: CardSpec = "chara_card_v2"
    raw: Mapping[str, object]
    avatar: bytes | None = None
