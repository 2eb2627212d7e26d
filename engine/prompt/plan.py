"""The layout a mode produces before the budget fill: ordered slots and in-chat prompts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from engine.prompt.inchat import InChatPrompt
from engine.prompt.ir import IRMessage

SlotKind = Literal["text", "history", "examples"]


@dataclass(slots=True, kw_only=True)
class Slot:
    """One position of the prompt: fixed messages, or the place of the history/examples."""

    identifier: str
    kind: SlotKind = "text"
    messages: list[IRMessage] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class Plan:
    """Slots in prompt order, the in-chat prompts, and the control prompts that go last."""

    slots: list[Slot] = field(default_factory=list)
    in_chat: list[InChatPrompt] = field(default_factory=list)
    controls: list[IRMessage] = field(default_factory=list)

    def index_of(self, identifier: str) -> int | None:
        """The position of the slot with this identifier."""
        for index, slot in enumerate(self.slots):
            if slot.identifier == identifier:
                return index
        return None
