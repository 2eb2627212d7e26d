"""World info placed before/after the Author's Note (SillyTavern positions 2 and 3) goes where
the note goes whenever the note's interval inserts it this turn, with or without note text, as
SillyTavern decides; interval 0 turns the note off and those entries with it. Checked with a
real world book whose every entry uses position 2."""

from __future__ import annotations

import json
from pathlib import Path

from engine.formats.worldbook import WorldBook, parse_worldbook
from engine.prompt.assemble import AssemblyResult
from engine.prompt.inputs import NOTE_IN_PROMPT, AuthorNote
from engine.prompt.ir import IRMessage
from engine.prompt.wi_sources import BookSource
from tests.conftest import SHARED
from tests.test_prompt.helpers import chat, default_preset, run

AN_TOP_BOOK = SHARED / "realworld" / "worldbooks" / "ft_EU4.json"
"""Twenty constant entries, every one at position 2 (before the Author's Note)."""


def _book(path: Path = AN_TOP_BOOK) -> WorldBook:
    return parse_worldbook(json.loads(path.read_text("utf-8")), source=str(path), name=path.stem)


def _assemble(note: AuthorNote | None) -> AssemblyResult:
    history = chat("hi", "hello", "how are you", "fine", "and now?", "we march")
    return run(
        default_preset(),
        history,
        user_input="onward",
        books=[BookSource(book=_book())],
        author_note=note,
        max_context=32_000,
    )


def _world_refs(message: IRMessage) -> list[str]:
    return [s.source.ref for s in message.sections if s.source.kind == "world"]


def _carrier(result: AssemblyResult) -> tuple[int, IRMessage]:
    """The one message holding world entries, and its depth (0 = after the newest)."""
    messages = list(result.ir.messages)
    holding = [i for i, m in enumerate(messages) if _world_refs(m)]
    assert len(holding) == 1, [m.identifier for m in messages]
    index = holding[0]
    chat_after = sum(1 for m in messages[index + 1 :] if m.identifier.startswith("chatHistory"))
    return chat_after, messages[index]


def test_real_book_all_entries_at_position_two() -> None:
    book = _book()
    assert len(book.entries) == 20 and {e.position for e in book.entries} == {2}


def test_entries_go_at_the_note_depth_when_the_note_has_no_text() -> None:
    result = _assemble(AuthorNote(text="", depth=2, role=0))
    activated = {e.key for e in result.world_info.activated}
    assert len(activated) == 20
    depth, message = _carrier(result)
    assert depth == 2 and message.role == "system"
    # Every activated entry is in the prompt, in one message, where the note would be.
    assert set(_world_refs(message)) == activated
    first = next(e for e in result.world_info.activated if e.uid == 0)
    assert first.content in message.content


def test_no_note_set_behaves_as_sillytavern_default_note() -> None:
    # A chat without a note has SillyTavern's default one: empty, every turn, depth 4, system.
    result = _assemble(None)
    depth, message = _carrier(result)
    assert depth == 4 and message.role == "system"
    assert len(_world_refs(message)) == 20


def test_interval_zero_keeps_them_out() -> None:
    result = _assemble(AuthorNote(text="", interval=0))
    assert len(result.world_info.activated) == 20
    assert not any(_world_refs(m) for m in result.ir.messages)


def test_interval_not_due_keeps_them_out_and_due_puts_them_in() -> None:
    # Four user messages with the input: every third is not due, every second (4 % 2) is.
    not_due = _assemble(AuthorNote(text="", interval=3))
    assert not any(_world_refs(m) for m in not_due.ir.messages)
    due = _assemble(AuthorNote(text="", interval=2, depth=1))
    assert _carrier(due)[0] == 1


def test_empty_in_prompt_note_carries_them_after_main() -> None:
    result = _assemble(AuthorNote(text="", position=NOTE_IN_PROMPT))
    messages = list(result.ir.messages)
    index = next(i for i, m in enumerate(messages) if _world_refs(m))
    assert messages[index].identifier == "authorsNote"
    assert messages[index - 1].identifier == "main"
    assert len(_world_refs(messages[index])) == 20
