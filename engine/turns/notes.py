"""The session's Author's Note (SillyTavern's per-chat note): kept, checked and set by command.

A session keeps at most one note, under the settings key :data:`AUTHOR_NOTE`, as JSON with
names instead of SillyTavern's numbers (``{"text", "interval", "position", "depth", "role"}``)
so the stored settings read plainly. The prompt assembler places it
(:mod:`engine.prompt.prepare`); this module only reads, validates and parses it.

The text command every text front end shares (console, Telegram)::

    /note                                   show the note
    /note off                               clear it
    /note [depth=N] [interval=N] [position=NAME] [role=NAME] TEXT
                                            set it; options not given keep their value
    /note depth=2 role=user                 change only those options
    /note depth=2 -- x=1 is the rule        ``--`` ends the options (text that looks like one)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from engine.errors import ConfigurationError
from engine.prompt.inputs import NOTE_BEFORE_PROMPT, NOTE_IN_CHAT, NOTE_IN_PROMPT, AuthorNote
from engine.timeline.values import SessionSettings

AUTHOR_NOTE: Final = "author_note"
"""Session setting holding the note (absent or null: no note)."""
MAX_NOTE_CHARS: Final = 4_000
"""A note text longer than this is refused (it is sent with every prompt it is due in)."""
MAX_NOTE_DEPTH: Final = 1_000
"""The deepest in-chat position a note may take (messages from the end of the chat)."""
MAX_NOTE_INTERVAL: Final = 1_000
"""The largest insertion frequency (every N user messages) a note may have."""
POSITIONS: Final[Mapping[str, int]] = {
    "in_chat": NOTE_IN_CHAT,
    "in_prompt": NOTE_IN_PROMPT,
    "before_prompt": NOTE_BEFORE_PROMPT,
}
"""Position names: in the chat at ``depth``, after the main prompt, before the main prompt."""
ROLES: Final[Mapping[str, int]] = {"system": 0, "user": 1, "assistant": 2}
"""Role names of an in-chat note, with SillyTavern's numbers."""
OPTIONS: Final = ("depth", "interval", "position", "role")
"""The options of the ``/note`` command, in the order they are shown."""
OFF_WORDS: Final = frozenset({"off", "clear"})
"""Arguments of ``/note`` that clear the note."""
SUMMARY_CHARS: Final = 200
"""How long :func:`summarize_note` lets its line grow (session info shows it among others)."""
NO_NOTE_TO_CHANGE: Final = "There is no Author's Note to change"
"""Said (one line, nothing stored) when options are given without text and there is no note."""
USAGE: Final = (
    "usage: /note (show), /note off (clear), /note [depth=N] [interval=N] "
    "[position=in_chat|in_prompt|before_prompt] [role=system|user|assistant] TEXT"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class NoteCommand:
    """What a ``/note`` line asks for: ``show``, ``clear``, or ``set`` the note ``note``."""

    action: Literal["show", "clear", "set"]
    note: AuthorNote | None = None


def position_name(position: int) -> str:
    """The name of an assembler position number."""
    return next(name for name, number in POSITIONS.items() if number == position)


def role_name(role: int) -> str:
    """The name of a role number."""
    return next(name for name, number in ROLES.items() if number == role)


def _whole(field: str, value: Any, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        raise ConfigurationError(
            f"author_note.{field} must be a whole number from 0 to {high}, not {value!r}"
        )
    return value


def _named(field: str, value: Any, names: Mapping[str, int]) -> int:
    if isinstance(value, str) and value.strip().lower() in names:
        return names[value.strip().lower()]
    raise ConfigurationError(
        f"author_note.{field} must be one of {', '.join(names)}, not {value!r}"
    )


def check_note(note: AuthorNote) -> AuthorNote:
    """``note`` when every field is within its range; ConfigurationError naming the field and
    the allowed values otherwise."""
    if len(note.text) > MAX_NOTE_CHARS:
        raise ConfigurationError(
            f"author_note.text is {len(note.text)} characters long; "
            f"MAX_NOTE_CHARS={MAX_NOTE_CHARS}"
        )
    _whole("interval", note.interval, MAX_NOTE_INTERVAL)
    _whole("depth", note.depth, MAX_NOTE_DEPTH)
    if note.position not in POSITIONS.values():
        raise ConfigurationError(
            f"author_note.position must be one of {', '.join(POSITIONS)}, not {note.position!r}"
        )
    if note.role not in ROLES.values():
        raise ConfigurationError(
            f"author_note.role must be one of {', '.join(ROLES)}, not {note.role!r}"
        )
    return note


def note_to_json(note: AuthorNote) -> dict[str, Any]:
    """The stored form of a note (checked first)."""
    check_note(note)
    return {
        "text": note.text,
        "interval": note.interval,
        "position": position_name(note.position),
        "depth": note.depth,
        "role": role_name(note.role),
    }


def note_from_json(data: Any) -> AuthorNote:
    """Read a stored note; ConfigurationError naming the first field that is wrong. Fields
    left out take SillyTavern's defaults (in the chat at depth 4, as system, every message)."""
    if not isinstance(data, Mapping):
        raise ConfigurationError(f"author_note must be an object, not {data!r}")
    unknown = sorted(set(data) - {"text", *OPTIONS})
    if unknown:
        raise ConfigurationError(
            f"author_note has unknown fields {', '.join(unknown)}; fields: text, "
            + ", ".join(OPTIONS)
        )
    default = AuthorNote()
    text = data.get("text", default.text)
    if not isinstance(text, str):
        raise ConfigurationError(f"author_note.text must be text, not {text!r}")
    note = AuthorNote(
        text=text,
        interval=_whole("interval", data.get("interval", default.interval), MAX_NOTE_INTERVAL),
        depth=_whole("depth", data.get("depth", default.depth), MAX_NOTE_DEPTH),
        position=_named(
            "position", data.get("position", position_name(default.position)), POSITIONS
        ),
        role=_named("role", data.get("role", role_name(default.role)), ROLES),
    )
    return check_note(note)


def check_note_setting(value: Any) -> None:
    """Refuse a stored ``author_note`` value the turn workflow could not use (None clears)."""
    if value is not None:
        note_from_json(value)


ST_NOTE_KEYS: Final[Mapping[str, str]] = {
    "note_prompt": "text",
    "note_interval": "interval",
    "note_position": "position",
    "note_depth": "depth",
    "note_role": "role",
}
"""SillyTavern's ``chat_metadata`` keys of a chat's note, with the note field each one sets
(positions and roles in SillyTavern's numbers, which the assembler uses too)."""


def note_from_chat_metadata(metadata: Mapping[str, Any]) -> AuthorNote | None:
    """The note a SillyTavern chat keeps in its ``chat_metadata`` (None when it has no
    ``note_*`` key; keys left out take SillyTavern's defaults). ConfigurationError naming the
    key when a value is not one SillyTavern writes."""
    found = {key: metadata[key] for key in ST_NOTE_KEYS if key in metadata}
    if not found:
        return None
    fields: dict[str, Any] = {}
    for key, value in found.items():
        name = ST_NOTE_KEYS[key]
        if name == "text":
            if not isinstance(value, str):
                raise ConfigurationError(f"chat_metadata.{key} must be text, not {value!r}")
            fields[name] = value
            continue
        # SillyTavern stores JavaScript numbers: 4.0 is 4.
        number = value
        if isinstance(value, float) and value.is_integer():
            number = int(value)
        if isinstance(number, bool) or not isinstance(number, int):
            raise ConfigurationError(f"chat_metadata.{key} must be a whole number, not {value!r}")
        fields[name] = number
    try:
        return check_note(AuthorNote(**fields))
    except ConfigurationError as exc:
        raise ConfigurationError(f"chat_metadata note settings: {exc}") from None


def session_note(settings: SessionSettings) -> AuthorNote | None:
    """The session's note, or None when it has none. A stored value that no longer reads
    (edited by hand) counts as no note: a turn must not fail over it, and setting a note
    again replaces it."""
    data = settings.extra.get(AUTHOR_NOTE)
    if data is None:
        return None
    try:
        return note_from_json(data)
    except ConfigurationError:
        return None


def describe_note(note: AuthorNote | None) -> str:
    """One line about the note for ``/note`` answers."""
    if note is None:
        return "No Author's Note."
    where = {
        NOTE_IN_CHAT: f"in the chat at depth {note.depth} as {role_name(note.role)}",
        NOTE_IN_PROMPT: "after the main prompt",
        NOTE_BEFORE_PROMPT: "before the main prompt",
    }[note.position]
    if note.interval == 0:
        when = "never inserted (interval 0)"
    elif note.interval == 1:
        when = "every turn"
    else:
        when = f"every {note.interval} user messages"
    return f"Author's Note ({where}, {when}): {note.text or '(empty)'}"


def summarize_note(note: AuthorNote | None, max_chars: int = SUMMARY_CHARS) -> str:
    """:func:`describe_note` on one line for session info views: line breaks in the text
    become spaces and the line is cut at ``max_chars`` (a note may be thousands of
    characters long, and an info view shows it among other lines)."""
    line = " ".join(describe_note(note).split())
    return line if len(line) <= max_chars else line[: max_chars - 1].rstrip() + "…"


def _option(note: AuthorNote, name: str, value: str) -> AuthorNote:
    if name in ("depth", "interval"):
        try:
            number = int(value)
        except ValueError:
            raise ConfigurationError(
                f"author_note.{name} must be a whole number, not {value!r}"
            ) from None
        return replace(note, depth=number) if name == "depth" else replace(note, interval=number)
    if name == "position":
        return replace(note, position=_named("position", value, POSITIONS))
    return replace(note, role=_named("role", value, ROLES))


def parse_note_command(args: str, current: AuthorNote | None) -> NoteCommand:
    """Read the arguments of ``/note`` (see the module doc). Options come first as
    ``name=value``; the rest of the line, as typed, is the text. Options not given keep the
    value of ``current`` (SillyTavern's defaults when there is none); options without text
    keep the current text. ConfigurationError for an unknown option or a bad value, and for
    options without text when there is no note (they would make an empty one)."""
    rest = args.strip()
    if not rest:
        return NoteCommand(action="show")
    if rest.lower() in OFF_WORDS:
        return NoteCommand(action="clear")
    note = current or AuthorNote()
    changed = False
    while rest:
        head, _, tail = rest.partition(" ")
        if head == "--":
            rest = tail.strip()
            break
        name, equals, value = head.partition("=")
        if not equals or not name.isidentifier():
            break
        if name.lower() not in OPTIONS:
            raise ConfigurationError(
                f"unknown /note option {name!r}; options: {', '.join(OPTIONS)} "
                "(put -- before a text that starts with name=value)"
            )
        note = _option(note, name.lower(), value)
        changed = True
        rest = tail.strip()
    if rest:
        note = replace(note, text=rest)
    elif not changed:
        raise ConfigurationError(USAGE)
    elif current is None:
        raise ConfigurationError(
            f"{NO_NOTE_TO_CHANGE}; set one with its text: /note [options] TEXT"
        )
    return NoteCommand(action="set", note=check_note(note))


__all__ = [
    "AUTHOR_NOTE",
    "MAX_NOTE_CHARS",
    "MAX_NOTE_DEPTH",
    "MAX_NOTE_INTERVAL",
    "NO_NOTE_TO_CHANGE",
    "POSITIONS",
    "ROLES",
    "SUMMARY_CHARS",
    "USAGE",
    "NoteCommand",
    "check_note",
    "check_note_setting",
    "describe_note",
    "note_from_json",
    "note_to_json",
    "parse_note_command",
    "session_note",
    "summarize_note",
]
