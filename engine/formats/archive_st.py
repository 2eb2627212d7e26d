"""A SillyTavern chat as a native archive, so importing it is one all-or-nothing write.

The chat becomes the ``main`` branch of a new session: user and system lines are the inputs of
the next floor, each character line closes a committed floor whose pages are its swipes (the
swipe that was shown is the active page). Times come from ``send_date`` (the swipe's own date
for the other pages when it has one, else the message's, else ``now``).

Kept beyond what the timeline models, as the turn service's import keeps it
(:mod:`engine.formats.st_kept`): the header line and the trailing lines under the session
setting ``st_chat_files`` (branch ``main``), each line's other fields (``extra``,
``force_avatar``, ``gen_started``, dates as spelt, ...) on page 1 of its floor, each swipe's
``swipe_info`` on its page; ``chat_metadata.variables`` become the session's chat-scope
variables (explicit writes, in the variable log and the values). Hidden lines
(``is_system`` without a note type, as SillyTavern hides a message) come in hidden: a user line
as a hidden input, a character line as hidden pages, with its floor when the floor's inputs
were hidden too. Lines after the last character
line are kept on a failed floor (``error`` says why): they have no reply to form a turn with.

The result is validated like any archive (:func:`~engine.formats.archive.parse_archive`), so a
chat whose texts the database could not store fails here with a FormatError, before any write.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from engine.errors import LimitExceededError
from engine.formats.archive import (
    Archive,
    ArchiveBranch,
    ArchiveFloor,
    ArchiveLogEntry,
    ArchiveMessage,
    ArchivePage,
    ArchiveSession,
    ArchiveValue,
    archive_to_json,
    parse_archive,
)
from engine.formats.st_chat import ChatEntry, ChatLog
from engine.formats.st_kept import ST_FILES_SETTING, chat_variables, file_record, page_meta
from engine.timeline.values import MAIN_BRANCH, MessageRole, SessionSettings

MAX_CHAT_FLOORS: Final = 100_000
"""A SillyTavern chat with more character replies than this is refused."""
TRAILING_INPUT_ERROR: Final = "imported chat ends with messages that have no reply"


def _json_safe(value: object) -> Any:
    """Datetimes in unknown fields are written as ISO text (archives hold plain JSON)."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def archive_from_st_chat(log: ChatLog, *, now: datetime, source: str = "") -> Archive:
    """The chat as an archive of one ``main`` branch (see the module docstring)."""
    variables = chat_variables(log, source=source)
    floors: list[ArchiveFloor] = []
    pages: list[ArchivePage] = []
    messages: list[ArchiveMessage] = []
    inputs: list[ChatEntry] = []

    def when(value: datetime | None) -> datetime:
        return (value or now).astimezone(UTC)

    def add_inputs(floor: int) -> None:
        for seq, entry in enumerate(inputs):
            role: MessageRole = "user" if entry.is_user else "system"
            messages.append(
                ArchiveMessage(
                    floor=floor,
                    page=None,
                    seq=seq,
                    role=role,
                    speaker_id=None,
                    speaker_name=entry.name,
                    raw=entry.text,
                    display=entry.text,
                    hidden=entry.is_hidden,
                    platform_ref=None,
                    created_at=when(entry.send_date),
                )
            )
        inputs.clear()

    for entry in log.entries:
        # A hidden line is is_system without a note type; a hidden character line is still
        # a reply (hidden), a hidden user line still an input (hidden).
        if entry.is_user or (entry.is_system and not entry.is_hidden):
            inputs.append(entry)
            continue
        if len(floors) >= MAX_CHAT_FLOORS:
            raise LimitExceededError(
                f"{source}: more than MAX_CHAT_FLOORS={MAX_CHAT_FLOORS} replies",
                limit="MAX_CHAT_FLOORS",
                value=MAX_CHAT_FLOORS,
            )
        floor = len(floors)
        started = when(inputs[0].send_date if inputs else entry.send_date)
        # As the service's import does: a hidden reply hides its floor when every input of
        # the floor was hidden too, else only its pages.
        floor_hidden = entry.is_hidden and all(i.is_hidden for i in inputs)
        swipes = entry.pages
        active = entry.swipe_id if 0 <= entry.swipe_id < len(swipes) else len(swipes) - 1
        kept_inputs = list(inputs)
        add_inputs(floor)
        for number, swipe in enumerate(swipes, start=1):
            meta: dict[str, Any] = _json_safe(page_meta(entry, number - 1, kept_inputs))
            is_active = number - 1 == active
            stamp = when(entry.send_date if is_active else swipe.send_date or entry.send_date)
            messages.append(
                ArchiveMessage(
                    floor=floor,
                    page=len(pages),
                    seq=0,
                    role="assistant",
                    speaker_id=None,
                    speaker_name=entry.name,
                    raw=swipe.text,
                    display=swipe.text,
                    hidden=False,
                    platform_ref=None,
                    created_at=stamp,
                )
            )
            pages.append(
                ArchivePage(
                    floor=floor,
                    number=number,
                    status="committed",
                    hidden=entry.is_hidden,
                    error=None,
                    meta=meta,
                    created_at=stamp,
                )
            )
        floors.append(
            ArchiveFloor(
                branch=0,
                seq=floor + 1,
                state="committed",
                active_page=active + 1,
                hidden=floor_hidden,
                error=None,
                created_at=started,
                updated_at=when(entry.send_date),
            )
        )
    record = _json_safe(file_record(log, inputs))
    settings = SessionSettings(extra={ST_FILES_SETTING: {MAIN_BRANCH: record}}).to_json()
    if inputs:
        floor = len(floors)
        started = when(inputs[0].send_date)
        add_inputs(floor)
        floors.append(
            ArchiveFloor(
                branch=0,
                seq=floor + 1,
                state="failed",
                active_page=None,
                hidden=False,
                error=TRAILING_INPUT_ERROR,
                created_at=started,
                updated_at=started,
            )
        )
    created = when(log.create_date or (floors[0].created_at if floors else None))
    archive = Archive(
        session=ArchiveSession(
            platform="console",
            key=log.character_name or "imported",
            realm_platform="console",
            realm_key="local",
            settings=settings,
            created_at=created,
        ),
        exported_at=now,
        branches=(
            ArchiveBranch(
                name=MAIN_BRANCH, parent=None, fork_floor=None, fork_page=None, created_at=created
            ),
        ),
        floors=tuple(floors),
        pages=tuple(pages),
        messages=tuple(messages),
        variable_log=tuple(
            ArchiveLogEntry(
                source="explicit",
                scope="chat",
                key=key,
                op="set",
                value=value,
                branch=0,
                seq=None,
                floor=None,
                page=None,
                created_at=created,
            )
            for key, value in variables.items()
        ),
        variable_values=tuple(
            ArchiveValue(scope="chat", owner=None, key=key, value=value)
            for key, value in variables.items()
        ),
    )
    return parse_archive(archive_to_json(archive), source=source)
