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
    block: str,
    *,
    user_name: str,
    char_name: str,
    is_group: bool = False,
    members: Sequence[str] = (),
) -> list[ExampleTurn]:
    """The turns of one block, as SillyTavern's ``parseExampleIntoIndividual`` makes them.

    The first line (the block marker) is skipped; a line starting ``"<user>:"`` starts a
    user turn, one starting ``"<char>:"`` or, in a group, ``"<member>:"`` for any of the
    group's ``members`` an example turn of the characters; lines before the first speaker
    join the first turn. Only a change between the user and the characters ends a turn, so
    consecutive lines of two members make one turn. A member's line names the turn's
    speaker, who stays so until another member's line (a ``"<char>:"`` line keeps it, as in
    SillyTavern). The speaker's prefix is removed once and the text trimmed; in a group each
    turn then starts with its speaker's name (the user's on a user turn)."""
    lines = _START.sub("{Example Dialogue:}", block, count=1).replace("\r", "").split("\n")
    user_prefixes = _prefixes(user_name, ("{{user}}", "<USER>"))
    char_prefixes = _prefixes(char_name, ("{{char}}", "<BOT>"))
    member_prefixes = tuple(f"{name}:" for name in members) if is_group else ()
    turns: list[ExampleTurn] = []
    current: list[str] = []
    speaker: str | None = None
    bot_name = char_name

    def flush(who: str) -> None:
        if who == EXAMPLE_USER:
            name, prefixes = user_name, user_prefixes
        elif bot_name == char_name:
            name, prefixes = char_name, char_prefixes
        else:
            name, prefixes = bot_name, (f"{bot_name}:",)
        text = "\n".join(current)
        for prefix in prefixes:
            if prefix in text:
                text = text.replace(prefix, "", 1)
                break
        text = text.strip()
        if is_group:
            text = f"{name}: {text}"
        turns.append(ExampleTurn(name=who, content=text))
        current.clear()

    for line in lines[1:]:
        if line.startswith(user_prefixes):
            if speaker == EXAMPLE_ASSISTANT:
                flush(EXAMPLE_ASSISTANT)
            speaker = EXAMPLE_USER
        elif line.startswith(char_prefixes) or (
            member_prefixes and line.startswith(member_prefixes)
        ):
            if not line.startswith(char_prefixes):
                bot_name = line.split(":", 1)[0]
            if speaker == EXAMPLE_USER:
                flush(EXAMPLE_USER)
            speaker = EXAMPLE_ASSISTANT
        current.append(line)
    if speaker is not None:
        flush(speaker)
    return turns
