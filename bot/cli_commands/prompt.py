"""``tavernbot prompt dry-run``: assemble a prompt from files, without a database or a model.

Reads a card (PNG or JSON), optionally a preset, world books, a regex-script file and a
SillyTavern chat (JSONL), appends ``--message`` as the newest user message and prints the
messages with their sources, the world info activations, the macro diagnostics and the budget.
A malformed file stops with an error naming the file, the field and the problem (exit 1).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from bot.cli_commands import Subcommands
from engine.errors import ConfigurationError, FormatError
from engine.formats.cards import CharacterCard, parse_card
from engine.formats.json_input import load_object, loads
from engine.formats.preset import Preset, parse_preset
from engine.formats.regex_scripts import (
    RegexScript,
    card_regex_scripts,
    parse_regex_script,
    parse_regex_scripts,
)
from engine.formats.worldbook import character_book_to_worldbook, parse_worldbook
from engine.prompt.assemble import AssemblyResult, assemble
from engine.prompt.budget import TokenCounter
from engine.prompt.dry_run_text import dry_run_text
from engine.prompt.inputs import (
    AssemblyInput,
    AuthorNote,
    CharacterFields,
    HistoryLine,
    ListHistory,
)
from engine.prompt.ir import MODES
from engine.prompt.macro_port import EngineMacros, macro_context
from engine.prompt.regex_budget import RegexBudget
from engine.prompt.regex_port import ScriptRegex
from engine.prompt.tokens import counter_for_model
from engine.prompt.wi_sources import BookSource
from engine.timeline.values import NewMessage
from engine.turns.context import stored_input
from engine.turns.greeting import greeting_line
from engine.turns.notes import check_note, note_from_chat_metadata

# A dry run reads whole files into memory; refuse anything absurdly large.
MAX_INPUT_BYTES = 64 * 1024 * 1024


def register(sub: Subcommands) -> None:
    """Add the ``prompt`` command group."""
    parser = sub.add_parser("prompt", help="inspect prompt assembly")
    inner = parser.add_subparsers(dest="prompt_command", metavar="ACTION", required=True)
    dry = inner.add_parser("dry-run", help="assemble a prompt from files and print it")
    dry.add_argument("--card", type=Path, required=True, help="character card (PNG or JSON)")
    dry.add_argument("--preset", type=Path, help="Chat Completion preset (JSON)")
    dry.add_argument(
        "--worldbook", type=Path, action="append", default=[], help="world book (repeatable)"
    )
    dry.add_argument("--regex", type=Path, help="regex scripts (JSON object or array)")
    dry.add_argument("--history", type=Path, help="SillyTavern chat (JSONL)")
    dry.add_argument("--user", default="User", help="the user's name ({{user}})")
    dry.add_argument("--message", required=True, help="the new user message")
    dry.add_argument("--max-context", type=int, help="context size in tokens (preset's if unset)")
    # The note options override the --history chat's own note (its chat_metadata note_*),
    # which overrides SillyTavern's default: no text, every turn, depth 4.
    dry.add_argument("--note", help="the Author's Note text")
    dry.add_argument(
        "--note-interval",
        type=int,
        help="insert the note every N user messages (0: never; default 1, every turn)",
    )
    dry.add_argument(
        "--note-depth",
        type=int,
        help="messages from the end of the chat where the note goes (default 4)",
    )
    dry.add_argument("--mode", choices=MODES, default="compat_strict")
    dry.add_argument("--json", action="store_true", help="print JSON")
    dry.set_defaults(handler=dry_run)


def _read(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    if len(data) > MAX_INPUT_BYTES:
        raise FormatError(f"over MAX_INPUT_BYTES={MAX_INPUT_BYTES}", source=str(path))
    return data


def read_history(path: Path, *, user_name: str) -> list[HistoryLine]:
    """The visible messages of a SillyTavern JSONL chat (the header and hidden ones skipped)."""
    text = _read(path).decode("utf-8-sig", errors="strict") if path else ""
    lines: list[HistoryLine] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        value = loads(raw, source=str(path), field=f"line {number}")
        if not isinstance(value, Mapping):
            raise FormatError("expected a JSON object", source=str(path), field=f"line {number}")
        if "mes" not in value:
            if number == 1:
                continue  # the header
            raise FormatError("missing 'mes'", source=str(path), field=f"line {number}")
        mes = value.get("mes")
        if not isinstance(mes, str):
            raise FormatError("'mes' must be text", source=str(path), field=f"line {number}.mes")
        if value.get("is_system"):
            continue
        extra = value.get("extra")
        narrator = isinstance(extra, Mapping) and extra.get("type") == "narrator"
        is_user = bool(value.get("is_user"))
        lines.append(
            HistoryLine(
                text=mes,
                is_user=is_user,
                name=str(value.get("name") or (user_name if is_user else "")),
                floor=len(lines) + 1,
                role="system" if narrator else None,
                force_avatar=bool(value.get("force_avatar")),
            )
        )
    return lines


def read_chat_note(path: Path) -> AuthorNote | None:
    """The Author's Note kept in a SillyTavern chat's header (``chat_metadata.note_*``), or
    None when the chat has no header or no note there."""
    try:
        with path.open("rb") as stream:
            first = stream.readline(MAX_INPUT_BYTES)
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    if not first.strip():
        return None
    header = loads(first.decode("utf-8-sig", errors="strict"), source=str(path), field="line 1")
    if not isinstance(header, Mapping) or "mes" in header:
        return None
    metadata = header.get("chat_metadata")
    if not isinstance(metadata, Mapping):
        return None
    try:
        return note_from_chat_metadata(metadata)
    except ConfigurationError as exc:
        raise FormatError(str(exc), source=str(path), field="line 1") from None


def _author_note(args: argparse.Namespace) -> AuthorNote:
    """The note of the dry run: the options over the chat's note over SillyTavern's default
    (like a SillyTavern chat, a dry run always has one, so world info placed before/after it
    shows where it would go)."""
    note = (read_chat_note(args.history) if args.history else None) or AuthorNote()
    if args.note is not None:
        note = replace(note, text=args.note)
    if args.note_interval is not None:
        note = replace(note, interval=args.note_interval)
    if args.note_depth is not None:
        note = replace(note, depth=args.note_depth)
    return check_note(note)


def _scripts(
    regex_file: Path | None, preset: Preset, card: CharacterCard, source: str
) -> list[RegexScript]:
    """Global (the file), then preset, then character scripts, as SillyTavern orders them."""
    scripts: list[RegexScript] = []
    if regex_file is not None:
        scripts.extend(parse_regex_scripts(_read(regex_file), source=str(regex_file)))
    for index, item in enumerate(preset.regex_scripts):
        scripts.append(
            parse_regex_script(
                item, source=preset.source, field=f"extensions.regex_scripts[{index}]"
            )
        )
    scripts.extend(card_regex_scripts(card.extensions, source=source))
    return scripts


def _token_counter(preset: Preset) -> TokenCounter:
    """Exact counts for the preset's model (an OpenAI family), the estimate otherwise."""
    return counter_for_model(str(preset.raw.get("openai_model") or "gpt-4o"))


def build_result(args: argparse.Namespace) -> tuple[AssemblyResult, EngineMacros, list[str]]:
    """Load the files and assemble (raises FormatError on a malformed file)."""
    card_source = str(args.card)
    card = parse_card(_read(args.card), source=card_source)
    preset = (
        parse_preset(
            load_object(_read(args.preset), source=str(args.preset)), source=str(args.preset)
        )
        if args.preset
        else Preset(source="(default preset)")
    )
    books: list[BookSource] = []
    if card.character_book is not None:
        book = character_book_to_worldbook(
            card.character_book, source=card_source, path="data.character_book"
        )
        books.append(BookSource(book=book, kind="character"))
    for path in args.worldbook:
        data = load_object(_read(path), source=str(path))
        books.append(
            BookSource(book=parse_worldbook(data, source=str(path), name=path.stem), kind="chat")
        )
    scripts = _scripts(args.regex, preset, card, card_source)
    if args.history:
        lines = read_history(args.history, user_name=args.user)
    else:
        # A new chat: SillyTavern's opens with the card's greeting, so its first prompt has it.
        opening = greeting_line(card)
        lines = [opening] if opening is not None else []
    # SillyTavern's world entries filter characters by the card's file name.
    character = CharacterFields.from_card(card, avatar=args.card.name)
    # Scripts share one regex budget with the world info keys, as in a turn; the message is
    # first stored as a turn stores it (its user-input scripts of the store channel run on it,
    # by the turn's own function), so the dry run shows the prompt the turn would send.
    budget = RegexBudget()
    message = stored_input(NewMessage(role="user", raw=args.message), scripts, budget).raw
    context = macro_context(
        character, user_name=args.user, recent=lines, user_input=message, chat_id=card_source
    )
    macros = EngineMacros(context, phase="dry_run", trace=True)
    # Scripts see the same macros as the prompt ({{char}} in a replacement, substituteRegex).
    regex = ScriptRegex(scripts, macros, budget=budget)
    inp = AssemblyInput(
        preset=preset,
        character=character,
        history=ListHistory(lines),
        user_name=args.user,
        user_input=message,
        # Like a SillyTavern chat, the dry run always has a note: by default empty and due
        # every turn, so world info placed before/after it shows where it would go.
        author_note=_author_note(args),
        books=books,
        mode=args.mode,
        max_context=args.max_context,
        dry_run=True,
    )
    result = assemble(
        inp, macros=macros, regex=regex, tokens=_token_counter(preset), regex_budget=budget
    )
    # Each message already names its script.
    return result, macros, regex.messages


def report(
    result: AssemblyResult, macros: EngineMacros, regex_warnings: list[str]
) -> dict[str, Any]:
    """The dry-run JSON object."""
    return {
        "mode": result.ir.mode,
        "messages": [m.to_json() for m in result.ir.messages],
        "world_info": [e.to_json() for e in result.world_info.activated],
        "macro": {
            "phase": macros.phase,
            "warnings": [w.to_json() for w in macros.warnings],
            "traces": [t.to_json() for t in macros.traces],
            "mutations": [m.to_json() for m in macros.mutations],
        },
        "budget": result.ir.budget.to_json(),
        "timed_world_info": result.timed_state.to_json(),
        "warnings": list(result.ir.warnings) + regex_warnings,
    }


def dry_run(args: argparse.Namespace, out: Any = None) -> int:
    """The ``prompt dry-run`` handler."""
    stream = out or sys.stdout
    if args.max_context is not None and args.max_context <= 0:
        raise FormatError("must be a positive number of tokens", field="--max-context")
    result, macros, regex_warnings = build_result(args)
    data = report(result, macros, regex_warnings)
    if args.json:
        json.dump(data, stream, ensure_ascii=False, indent=2)
        stream.write("\n")
        return 0
    stream.write(dry_run_text(data))
    return 0
