"""Dialogue examples (``mes_example``): split into blocks and turned into example messages."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_START = re.compile(r"<START>", re.IGNORECASE)
EXAMPLE_USER = "example_user"
EXAMPLE_ASSISTANT = "example_assistant"


def parse_mes_examples(text: str) -> list[str]:
    """Blocks of ``text`` as SillyTavern splits them: each ``"<START>\\n" + block + "\\n"``."""
    if not text.strip() or text.strip() == "<START>":
        return []
    if not text.startswith("<START>"):
        text = "<START>\n" + text.strip()
    pieces = _START.split(text)[1:]
    return ["<START>\n" + piece.strip() + "\n" for piece in pieces]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExampleTurn:
    """One turn of an example block, sent as a system message named ``example_user`` or
    ``example_assistant``."""

    name: str
    content: str


def _prefixes(name: str, placeholders: Sequence[str]) -> tuple[str, ...]:
    # The raw-macro fallback leaves {{user}}/{{char}} in the text; accept those too.
    return tuple(p + ":" for p in (name, *placeholders) if p)


def split_example_block(
    block: str, *, user_name: str, char_name: str, is_group: bool = False
) -> list[ExampleTurn]:
    """The turns of one block. The first line (the block marker) is skipped; a line starting
    ``"<user>:"`` or ``"<char>:"`` starts a turn; lines before the first speaker join the first
    turn; the speaker prefix is removed once and the text trimmed."""
    lines = _START.sub("{Example Dialogue:}", block, count=1).replace("\r", "").split("\n")
    user_prefixes = _prefixes(user_name, ("{{user}}", "<USER>"))
    char_prefixes = _prefixes(char_name, ("{{char}}", "<BOT>"))
    turns: list[ExampleTurn] = []
    current: list[str] = []
    speaker: str | None = None

    def flush(who: str) -> None:
        prefixes = user_prefixes if who == EXAMPLE_USER else char_prefixes
        text = "\n".join(current)
        for prefix in prefixes:
            if prefix in text:
                text = text.replace(prefix, "", 1)
                break
        text = text.strip()
        if who == EXAMPLE_ASSISTANT and is_group:
            text = f"{char_name}: {text}"
        turns.append(ExampleTurn(name=who, content=text))
        current.clear()

    for line in lines[1:]:
        if line.startswith(user_prefixes):
            if speaker == EXAMPLE_ASSISTANT:
                flush(EXAMPLE_ASSISTANT)
            speaker = EXAMPLE_USER
        elif line.startswith(char_prefixes):
            if speaker == EXAMPLE_USER:
                flush(EXAMPLE_USER)
            speaker = EXAMPLE_ASSISTANT
        current.append(line)
    if speaker is not None:
        flush(speaker)
    return turns
