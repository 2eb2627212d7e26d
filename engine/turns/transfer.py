"""Imports and exports of SillyTavern files for a session (:class:`Transfer`).

- Cards, presets, world books and regex sets are validated with :mod:`engine.formats`, stored
  in the session's realm (the asset repository, by name) and bound to the session.
- A SillyTavern chat (JSONL) is imported onto a new branch of the session (forked before any
  floor), one floor per exchange, every swipe a page; a hidden reply (``is_system`` without a
  system-message type) comes in hidden, with its floor when its inputs were hidden too; a
  hidden input is kept as a hidden message of its floor.
  Messages after the last reply are kept on a failed floor (as the command-line import keeps
  them), so that they are exported again.
- An export writes the branch as SillyTavern JSONL, every page of a floor as a swipe; hidden
  floors and pages are left out, or written as SillyTavern writes hidden messages. The inputs
  of the floors after the last committed one (waiting for their reply, or failed before it)
  end the file as normal lines, as SillyTavern writes a message that has no reply yet.

A dry run (the prompt the next message would get) is :mod:`engine.turns.previews`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, Final

from engine.errors import FormatError, LimitExceededError
from engine.formats.archive_st import TRAILING_INPUT_ERROR
from engine.formats.cards import card_to_asset, parse_card
from engine.formats.json_input import load_object
from engine.formats.preset import PRESET_OBJECT, parse_preset
from engine.formats.regex_scripts import load_regex_file
from engine.formats.st_chat import ChatEntry, ChatLog, ChatPage, chat_to_jsonl_bytes, parse_chat
from engine.formats.worldbook import WORLDBOOK_OBJECT, parse_worldbook
from engine.ports import Storage
from engine.timeline.assets import AssetService
from engine.timeline.service import TimelineService
from engine.timeline.values import Floor, Message, MessageRole, NewMessage
from engine.turns.api import AssetKind, ImportSummary, SessionKey
from engine.turns.sessions import Sessions
from engine.turns.views import committed_numbers
from engine.variables import store

MAX_IMPORT_FLOORS: Final = 5_000
"""A chat import creates at most this many floors."""
EXPORT_PAGE: Final = 500
"""Floors read per unit of work while exporting."""
"""Top-level key of a stored card holding its picture (a PNG without card chunks, base64);
the same key the command-line import uses, so ``export card`` writes a PNG again."""
NARRATOR_TYPE: Final = "narrator"
NOTE_TYPE: Final = "generic"
"""SillyTavern's ``extra.type`` of a narrator message and of a generic system message: an
exported system note carries one, so that importing it back does not read it as hidden."""
ST_CHAT_SETTING: Final = "st_chat"
"""Session setting with the header of an imported SillyTavern chat (user and character names,
``chat_metadata``), written back by the export."""


class Transfer:
    """SillyTavern files in (into the session's realm or onto a new branch) and chats out."""

    def __init__(
        self,
        storage: Storage,
        sessions: Sessions,
        timeline: TimelineService,
        assets: AssetService,
    ) -> None:
        self._storage = storage
        self._sessions = sessions
        self._timeline = timeline
        self._assets = assets

    async def import_asset(
        self,
        key: SessionKey,
        kind: AssetKind,
        filename: str,
        data: bytes,
        *,
        bind: bool = True,
    ) -> ImportSummary:
        """Validate and store one SillyTavern file in the session's realm; ``bind``: use it
        in the session as well (a chat always gets its own branch)."""
        ids = await self._sessions.ids(key)
        session_id, realm_id = ids.session_id, ids.realm_id
        stem = PurePath(filename).stem or filename
        session = await self._sessions.settings(session_id)
        settings = session.settings
        if kind == "card":
            card = parse_card(data, source=filename)
            await self._assets.put(realm_id, "card", card.name, card_to_asset(card))
            if bind:
                await self._sessions.update(session_id, character=card.name)
            details: dict[str, Any] = {
                "book_entries": _count_entries(card.character_book),
                "greetings": 1 + len(card.alternate_greetings),
            }
            return ImportSummary(kind="card", name=card.name, details=details)
        if kind == "preset":
            obj = load_object(data, source=filename, what=PRESET_OBJECT)
            preset = parse_preset(obj, source=filename)
            await self._assets.put(realm_id, "preset", stem, obj)
            if bind:
                await self._sessions.update(session_id, preset=stem)
            return ImportSummary(
                kind="preset", name=stem, details={"prompts": len(preset.prompts)}
            )
        if kind == "worldbook":
            obj = load_object(data, source=filename, what=WORLDBOOK_OBJECT)
            book = parse_worldbook(obj, source=filename, name=stem)
            await self._assets.put(realm_id, "worldbook", stem, obj)
            books = [*settings.worldbooks, stem] if stem not in settings.worldbooks else None
            if bind and books is not None:
                await self._sessions.update(session_id, worldbooks=books)
            return ImportSummary(
                kind="worldbook", name=stem, details={"entries": len(book.entries)}
            )
        if kind == "regex":
            items, scripts = load_regex_file(data, source=filename)
            await self._assets.put(realm_id, "regex", stem, {"scripts": items})
            if bind and stem not in settings.regex_sets:
                await self._sessions.update(session_id, regex_sets=[*settings.regex_sets, stem])
            return ImportSummary(kind="regex", name=stem, details={"scripts": len(scripts)})
        if kind == "chat":
            return await self._import_chat(key, session_id, stem, data, filename)
        raise FormatError(f"unknown import kind {kind!r}", source=filename)

    async def _import_chat(
        self,
        key: SessionKey,
        session_id: int,
        stem: str,
        data: bytes,
        filename: str,
    ) -> ImportSummary:
        log = parse_chat(data, source=filename)
        taken = {b.name for b in await self._timeline.branches(session_id)}
        name, n = f"import-{stem}", 1
        while name in taken:
            n += 1
            name = f"import-{stem}-{n}"
        main = await self._sessions.branch(session_id, "main")
        branch = await self._timeline.fork(main.id, name=name, after_floor=0)
        inputs: list[NewMessage] = []
        hidden_inputs: list[bool] = []
        floors = 0
        for entry in log.entries:
            if entry.is_user or (entry.is_system and not entry.is_hidden):
                inputs.append(
                    NewMessage(
                        role="user" if entry.is_user else _note_role(entry),
                        raw=entry.text,
                        speaker_name=entry.name,
                        hidden=entry.is_hidden,
                    )
                )
                hidden_inputs.append(entry.is_hidden)
                continue
            floors += 1
            if floors > MAX_IMPORT_FLOORS:
                raise LimitExceededError(
                    f"{filename}: more than MAX_IMPORT_FLOORS={MAX_IMPORT_FLOORS} replies",
                    limit="MAX_IMPORT_FLOORS",
                    value=MAX_IMPORT_FLOORS,
                )
            floor = await self._timeline.open_floor(branch.id, inputs)
            await self._timeline.start_generating(floor.id)
            numbers: list[int] = []
            page_ids: list[int] = []
            for page in entry.pages:
                added = await self._timeline.add_page(floor.id)
                reply = NewMessage(role="assistant", raw=page.text, speaker_name=entry.name)
                await self._timeline.commit_page(added.id, messages=[reply])
                numbers.append(added.number)
                page_ids.append(added.id)
            if 0 <= entry.swipe_id < len(numbers) and numbers[entry.swipe_id] != numbers[-1]:
                await self._timeline.activate_page(floor.id, numbers[entry.swipe_id])
            if entry.is_hidden:
                await self._hide(floor.id, page_ids, whole_floor=all(hidden_inputs))
            inputs, hidden_inputs = [], []
        if inputs:
            # Messages with no reply yet: kept, like any turn whose reply never came.
            floor = await self._timeline.open_floor(branch.id, inputs)
            await self._timeline.fail_floor(floor.id, TRAILING_INPUT_ERROR)
        return ImportSummary(
            kind="chat", name=name, details={"floors": floors, "branch": name, "session": key.key}
        )

    async def export_chat(
        self, key: SessionKey, branch_name: str, *, include_hidden: bool = False
    ) -> bytes:
        """The branch as SillyTavern JSONL (the committed pages of each floor as swipes).

        Hidden floors, inputs and replies (a deleted platform message, a reset) are left out, and
        hidden pages are left out of the swipes; with ``include_hidden`` they are all written, a
        hidden message with ``"is_system": true`` as SillyTavern writes a hidden message.
        """
        ids, branch = await self._sessions.target(key, branch_name)
        entries: list[ChatEntry] = []
        user_name: str | None = None
        char_name: str | None = None
        first = 1
        while True:
            async with self._storage.unit_of_work() as uow:
                lineage = await store.lineage_of(uow, branch)
                head = await store.head_of(uow, lineage)
                if first > head:
                    break
                last = min(head, first + EXPORT_PAGE - 1)
                # Failed floors too: the user's message stays in the chat without a reply.
                pairs = await store.lineage_floors(uow, lineage, first, last)
                floor_ids = [f.id for f, _ in pairs]
                pages = await uow.pages.of_floors(floor_ids)
                messages = await uow.messages.of_floors(floor_ids)
            for floor, active in pairs:
                if floor.hidden and not include_hidden:
                    continue
                own = [m for m in messages if m.floor_id == floor.id]
                inputs = _input_entries(floor, own, include_hidden=include_hidden)
                user_name = user_name or next((e.name for e in inputs if e.is_user), None)
                entries.extend(inputs)
                if active is None:
                    continue
                reply = [m for m in own if m.page_id == active.id]
                if not reply:
                    continue
                # A deleted reply hides its page; shown as the floor's reply, that hides the reply.
                hidden = floor.hidden or active.hidden or any(m.hidden for m in reply)
                if hidden and not include_hidden:
                    continue
                floor_pages = {p.number: p for p in pages if p.floor_id == floor.id}
                numbers = [
                    n
                    for n in committed_numbers(list(floor_pages.values()))
                    if include_hidden or not floor_pages[n].hidden
                ]
                texts = [
                    "".join(m.raw for m in own if m.page_id == floor_pages[n].id) for n in numbers
                ]
                char_name = char_name or reply[0].speaker_name
                swipe_id = numbers.index(active.number)
                entries.append(
                    ChatEntry(
                        name=reply[0].speaker_name or "",
                        is_user=False,
                        is_system=hidden,
                        text="".join(m.raw for m in reply),
                        send_date=reply[0].created_at,
                        swipes=tuple(ChatPage(text=t) for t in texts) if len(texts) > 1 else (),
                        swipe_id=swipe_id if len(texts) > 1 else 0,
                    )
                )
            first = last + 1
        async with self._storage.read() as uow:
            lineage = await store.lineage_of(uow, branch)
            waiting = await uow.floors.uncommitted_after(
                branch.id, await store.head_of(uow, lineage)
            )
            messages = await uow.messages.of_floors([f.id for f in waiting])
        for floor in waiting:
            if floor.hidden and not include_hidden:
                continue
            own = [m for m in messages if m.floor_id == floor.id]
            entries.extend(_input_entries(floor, own, include_hidden=include_hidden))
        session = await self._sessions.settings(ids.session_id)
        header = session.settings.extra.get(ST_CHAT_SETTING)
        if isinstance(header, Mapping):
            # An imported SillyTavern chat: its names and metadata go back as they came.
            metadata = header.get("chat_metadata")
            log = ChatLog(
                user_name=_text_or(header.get("user_name"), user_name),
                character_name=_text_or(header.get("character_name"), char_name),
                chat_metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
                header=dict(header),
                entries=tuple(entries),
            )
        else:
            log = ChatLog(user_name=user_name, character_name=char_name, entries=tuple(entries))
        return chat_to_jsonl_bytes(log)

    async def _hide(self, floor_id: int, page_ids: list[int], *, whole_floor: bool) -> None:
        """An imported hidden reply: the whole floor when its inputs were hidden too (as a
        deleted input hides its floor), else the reply's pages (its inputs stay in the story)."""
        async with self._storage.unit_of_work() as uow:
            if whole_floor:
                await uow.floors.set_hidden(floor_id, True)
                return
            for page_id in page_ids:
                await uow.pages.set_hidden(page_id, True)


def _note_role(entry: ChatEntry) -> MessageRole:
    """The role of a SillyTavern system note (``is_system`` with a message type)."""
    return "narrator" if entry.extra.get("type") == NARRATOR_TYPE else "system"


def _text_or(value: object, default: str | None) -> str | None:
    return value if isinstance(value, str) and value else default


def _input_entries(
    floor: Floor, messages: list[Message], *, include_hidden: bool
) -> list[ChatEntry]:
    """The floor's input messages as lines (hidden ones only with ``include_hidden``)."""
    out: list[ChatEntry] = []
    for m in messages:
        hidden = floor.hidden or m.hidden
        if m.page_id is None and (include_hidden or not hidden):
            out.append(_entry(m, is_user=m.role == "user", hidden=hidden))
    return out


def _entry(message: Message, *, is_user: bool, hidden: bool = False) -> ChatEntry:
    note = message.role in ("system", "narrator")
    return ChatEntry(
        name=message.speaker_name or ("User" if is_user else ""),
        is_user=is_user,
        # SillyTavern marks hidden messages and system notes alike with is_system; a note
        # carries its message type, which tells it from a hidden message on import.
        is_system=hidden or note,
        text=message.raw,
        send_date=message.created_at,
        extra={"type": NARRATOR_TYPE if message.role == "narrator" else NOTE_TYPE} if note else {},
    )


def _count_entries(book: object) -> int:
    entries = book.get("entries") if isinstance(book, Mapping) else None
    return len(entries) if isinstance(entries, list | dict) else 0
