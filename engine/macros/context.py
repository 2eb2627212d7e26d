"""``MacroContext``: everything an evaluation reads, as plain deep-copyable data.

The caller owns the context (after TauriTavern's ``captureContext``). Evaluating twice on one
context shares its variables, banned words and random counter; ``copy.deepcopy(context)``
forks it, so a dry run can work on a copy while the real turn keeps the original.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(slots=True, kw_only=True)
class CardFields:
    """The character card and persona fields macros can read (raw; their macros are expanded
    one level when read)."""

    description: str = ""
    personality: str = ""
    scenario: str = ""
    persona: str = ""
    mes_examples: str = ""
    first_message: str = ""
    alternate_greetings: list[str] = field(default_factory=list)
    char_version: str = ""
    creator_notes: str = ""
    char_prompt: str = ""
    char_instruction: str = ""
    char_depth_prompt: str = ""


@dataclass(slots=True, kw_only=True)
class ChatMessage:
    """One message of the chat, in SillyTavern's shape."""

    mes: str = ""
    is_user: bool = False
    is_system: bool = False
    name: str = ""
    swipes: list[str] | None = None
    swipe_id: int | None = None
    send_date: str | None = None


@dataclass(slots=True, kw_only=True)
class MacroContext:
    """The input of an evaluation.

    ``local`` is the merged local view (page -> floor -> branch -> chat) the variable engine
    builds; ``global_vars`` is the realm's global scope. Both hold JSON values and are written
    in place by evaluation (the caller decides what to persist from the reported mutations).
    ``now`` freezes the clock (``None``: the time of each evaluation) and ``tz`` names its
    time zone. ``chat_id`` and ``seed`` make ``{{pick}}`` and ``{{random}}`` reproducible.
    ``settings`` holds SillyTavern-style options (``instruct``, ``context``, ``sysprompt``,
    ``reasoning``, ``prefer_character_prompt``, ``max_context``, ``max_response``, ...).
    ``extra`` holds data put there by context providers for extension macros.
    ``group_members`` (list order) and ``group_muted`` make it a group chat for ``{{group}}``,
    ``{{groupNotMuted}}`` and ``{{notChar}}``; ``group``, when set, overrides all three, as
    SillyTavern's ``groupOverride`` does.
    """

    user: str = "User"
    char: str = "Character"
    group: str | None = None
    group_members: list[str] = field(default_factory=list)
    group_muted: list[str] = field(default_factory=list)
    card: CardFields = field(default_factory=CardFields)
    chat: list[ChatMessage] = field(default_factory=list)
    local: dict[str, Any] = field(default_factory=dict)
    global_vars: dict[str, Any] = field(default_factory=dict)
    now: datetime | None = None
    tz: str = "UTC"
    seed: int | str | None = None
    chat_id: str | None = None
    chat_metadata: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    model: str = ""
    input: str = ""
    extensions: dict[str, bool] = field(default_factory=dict)
    outlets: dict[str, str] = field(default_factory=dict)
    authors_note: str = ""
    char_authors_note: str = ""
    default_authors_note: str = ""
    summary: str = ""
    last_generation_type: str = ""
    run_kind: str = ""
    prompt_mode: str = "compat_strict"
    dynamic_macros: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    banned_words: list[str] = field(default_factory=list)
    random_counter: int = 0
