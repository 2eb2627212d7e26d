"""Imports and exports of SillyTavern files for a session (:class:`Transfer`).

- Cards, presets, world books and regex sets are validated with :mod:`engine.formats`, stored
  in the session's realm (the asset repository, by name) and bound to the session.
- A SillyTavern chat (JSONL) is imported onto a new branch of the session (forked before any
  floor), one floor per exchange, every swipe a page; a hidden reply (``is_system`` without a
  system-message type) comes in hidden, with its floor when its inputs were hidden too; a
  hidden input is kept as a hidden message of its floor.
  Messages after the last reply are kept on a failed floor (as the command-line import keeps
  them), so that they are exported again. Every field the timeline does not model is kept
  (:mod:`engine.formats.st_kept`), and ``chat_metadata.variables`` become the session's
  chat-scope variables.
- An export writes the branch as SillyTavern JSONL, every page of a floor as a swipe; hidden
  floors and pages are left out, or written as SillyTavern writes hidden messages. The inputs
  of the floors after the last committed one (waiting for their reply, or failed before it)
  end the file as normal lines, as SillyTavern writes a message that has no reply yet. An
  imported chat starts from its kept lines, so an untouched one comes back as it was read,
  with the session's current chat-scope variables in ``chat_metadata.variables``.
- A SillyTavern group definition (``groups/<id>.json``) becomes the session's group, and the
  file is kept with the session; the group export writes the session's group back over it.

A dry run (the prompt the next message would get) is :mod:`engine.turns.previews`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any, Final

from engine.clock import SystemClock
from engine.errors import FormatError, LimitExceededError, NotFoundError
from engine.formats.archive_st import TRAILING_INPUT_ERROR
from engine.formats.cards import card_to_asset, parse_card
from engine.formats.json_input import load_object
from engine.formats.preset import PRESET_OBJECT, parse_preset
from engine.formats.regex_scripts import load_regex_file
from engine.formats.st_chat import ChatEntry, ChatLog, chat_to_jsonl_bytes, parse_chat
from engine.formats.st_dates import parse_timestamp
from engine.formats.st_group import (
    GROUP_FILE_SETTING,
    export_definition,
    kept_definition,
    member_avatar,
    member_name,
    parse_group,
)
from engine.formats.st_kept import (
    LEGACY_HEADER_SETTING,
    LINE_META,
    ST_FILES_SETTING,
    chat_variables,
    file_record,
    find_record,
    page_meta,
    with_variables,
)
from engine.formats.worldbook import WORLDBOOK_OBJECT, parse_worldbook
from engine.group.settings import GROUP_SETTING, group_of
from engine.ports import Clock, Storage
from engine.timeline.assets import AssetService
from engine.timeline.service import TimelineService
from engine.timeline.values import MessageRole, NewMessage
from engine.turns import st_lines
from engine.turns.api import AssetKind, ImportSummary, SessionKey
from engine.turns.members import find_name
from engine.turns.parsed_assets import DEFAULT_CHARACTER
from engine.turns.sessions import Sessions
from engine.turns.st_lines import NARRATOR_TYPE
from engine.turns.views import committed_numbers
from engine.variables import store
from engine.variables.service import VariableService

MAX_IMPORT_FLOORS: Final = 5_000
"""A chat import creates at most this many floors."""
EXPORT_PAGE: Final = 500
"""Floors read per unit of work while exporting."""
"""Top-level key of a stored card holding its picture (a PNG without card chunks, base64);
the same key the command-line import uses, so ``export card`` writes a PNG again."""
ST_CHAT_SETTING: Final = LEGACY_HEADER_SETTING
"""Session setting with the header of a chat imported by an earlier version (user and
character names, ``chat_metadata``), written back by the export; chats imported now keep
their whole file under :data:`~engine.formats.st_kept.ST_FILES_SETTING`."""


class Transfer:
    """SillyTavern files in (into the session's realm or onto a new branch) and chats out."""

    def __init__(
        self,
        storage: Storage,
        sessions: Sessions,
        timeline: TimelineService,
        assets: AssetService,
        variables: VariableService | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        self._storage = storage
        self._clock: Clock = clock or SystemClock()
        self._sessions = sessions
        self._timeline = timeline
        self._assets = assets
        self._variables = variables or VariableService(storage)

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
        if kind == "group":
            return await self._import_group(key, ids.realm_id, session_id, data, filename, bind)
        raise FormatError(f"unknown import kind {kind!r}", source=filename)

    async def _import_group(
        self,
        key: SessionKey,
        realm_id: int,
        session_id: int,
        data: bytes,
        filename: str,
        bind: bool,
    ) -> ImportSummary:
        """A SillyTavern group definition (``groups/<id>.json``) becomes the session's group
        (``bind``); its members, named by avatar file, are the realm's cards of those names
        (``Mira.png`` is the card Mira), so the cards are imported first. With one member the
        session is solo, playing it. The whole file is kept with the session
        (:data:`~engine.formats.st_group.GROUP_FILE_SETTING`) for :meth:`export_group`."""
        definition = parse_group(data, source=filename)
        cards = await self._assets.names(realm_id, "card")
        names: dict[str, str] = {}
        for avatar in definition.members:
            found = find_name(cards, member_name(avatar))
            if found is not None:
                names[avatar] = found
        missing = [member_name(a) for a in definition.members if a not in names]
        if missing:
            listed = ", ".join(sorted(cards)) if cards else "none"
            raise NotFoundError(
                f"{filename}: realm {key.realm} has no card for {', '.join(missing)} "
                f"(its cards: {listed}); import the members' cards first"
            )
        group = definition.settings(names=names)
        if bind:
            await self._sessions.update(
                session_id,
                character=group.members[0],
                **{
                    GROUP_SETTING: group.to_json() if len(group.members) > 1 else None,
                    GROUP_FILE_SETTING: kept_definition(definition, names),
                },
            )
        details = {"members": list(group.members), "strategy": group.strategy, "mode": group.mode}
        return ImportSummary(
            kind="group", name=definition.name or PurePath(filename).stem, details=details
        )

    async def _import_chat(
        self,
        key: SessionKey,
        session_id: int,
        stem: str,
        data: bytes,
        filename: str,
    ) -> ImportSummary:
        log = parse_chat(data, source=filename)
        variables = chat_variables(log, source=filename)
        taken = {b.name for b in await self._timeline.branches(session_id)}
        name, n = f"import-{stem}", 1
        while name in taken:
            n += 1
            name = f"import-{stem}-{n}"
        main = await self._sessions.branch(session_id, "main")
        branch = await self._timeline.fork(main.id, name=name, after_floor=0)
        inputs: list[NewMessage] = []
        hidden_inputs: list[bool] = []
        input_lines: list[ChatEntry] = []
        floors = 0
        # A group chat (replies by several characters): each floor records its speaker, so
        # a regenerate there plays that character. A solo chat's floors keep none (they are
        # the session's character's, whatever name the file gives them).
        speakers = {e.name for e in log.entries if not _is_input(e)}
        group = len(speakers) > 1
        for entry in log.entries:
            if _is_input(entry):
                input_lines.append(entry)
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
            speaker = entry.name if group and entry.name else None
            floor = await self._timeline.open_floor(branch.id, inputs, speaker=speaker)
            await self._timeline.start_generating(floor.id)
            numbers: list[int] = []
            page_ids: list[int] = []
            for index, page in enumerate(entry.pages):
                # Page 1 keeps the line's and its inputs' fields the timeline does not model.
                meta = page_meta(entry, index, input_lines)
                added = await self._timeline.add_page(floor.id, meta=meta)
                reply = NewMessage(role="assistant", raw=page.text, speaker_name=entry.name)
                await self._timeline.commit_page(added.id, messages=[reply])
                numbers.append(added.number)
                page_ids.append(added.id)
            if 0 <= entry.swipe_id < len(numbers) and numbers[entry.swipe_id] != numbers[-1]:
                await self._timeline.activate_page(floor.id, numbers[entry.swipe_id])
            if entry.is_hidden:
                await self._hide(floor.id, page_ids, whole_floor=all(hidden_inputs))
            inputs, hidden_inputs, input_lines = [], [], []
        if inputs:
            # Messages with no reply yet: kept, like any turn whose reply never came.
            floor = await self._timeline.open_floor(branch.id, inputs)
            await self._timeline.fail_floor(floor.id, TRAILING_INPUT_ERROR)
        # The header and the trailing lines (a failed floor has no page to keep them on).
        session = await self._sessions.settings(session_id)
        files = session.settings.extra.get(ST_FILES_SETTING)
        kept = dict(files) if isinstance(files, Mapping) else {}
        kept[name] = file_record(log, input_lines)
        await self._sessions.update(session_id, **{ST_FILES_SETTING: kept})
        for variable, value in variables.items():
            await self._variables.set(branch.id, "chat", variable, value)
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
        session = await self._sessions.settings(ids.session_id)
        branches = await self._timeline.branches(ids.session_id)
        record = find_record(session.settings.extra, st_lines.ancestry(branch, branches))
        trailing = record.get("trailing") if record is not None else None
        entries: list[ChatEntry] = []
        user_name: str | None = None
        char_name: str | None = None
        grouped = group_of(session.settings.extra) is not None
        kept_group = session.settings.extra.get(GROUP_FILE_SETTING)

        def avatar_of(speaker: str | None) -> str | None:
            """A group reply's avatar file, as SillyTavern marks each group reply."""
            return member_avatar(kept_group, speaker) if grouped and speaker else None

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
                floor_pages = {p.number: p for p in pages if p.floor_id == floor.id}
                line_page = next((p for p in floor_pages.values() if LINE_META in p.meta), None)
                kept_inputs = st_lines.kept_inputs(floor, line_page, trailing)
                inputs = st_lines.input_entries(
                    floor, own, kept_inputs, include_hidden=include_hidden
                )
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
                numbers = [
                    n
                    for n in committed_numbers(list(floor_pages.values()))
                    if include_hidden or not floor_pages[n].hidden
                ]
                shown = [floor_pages[n] for n in numbers]
                texts = {p.number: "".join(m.raw for m in own if m.page_id == p.id) for p in shown}
                char_name = char_name or reply[0].speaker_name
                entries.append(
                    st_lines.reply_entry(
                        reply,
                        active,
                        shown,
                        texts,
                        line_page=line_page,
                        hidden=hidden,
                        avatar=avatar_of(floor.speaker),
                    )
                )
            first = last + 1
        async with self._storage.read() as uow:
            lineage = await store.lineage_of(uow, branch)
            waiting = await uow.floors.uncommitted_after(
                branch.id, await store.head_of(uow, lineage)
            )
            messages = await uow.messages.of_floors([f.id for f in waiting])
            chat_vars = await uow.variables.values("chat", ids.session_id)
        for floor in waiting:
            if floor.hidden and not include_hidden:
                continue
            own = [m for m in messages if m.floor_id == floor.id]
            kept_inputs = st_lines.kept_inputs(floor, None, trailing)
            entries.extend(
                st_lines.input_entries(floor, own, kept_inputs, include_hidden=include_hidden)
            )
        legacy = session.settings.extra.get(ST_CHAT_SETTING)
        if record is not None:
            # A chat imported whole: its header goes back as it came (or no header, if it
            # had none), with the session's current chat variables.
            header = record.get("header")
            kept_header = dict(header) if isinstance(header, Mapping) else None
            metadata = kept_header.get("chat_metadata") if kept_header is not None else None
            log = ChatLog(
                user_name=_text_or(kept_header.get("user_name"), None)
                if kept_header
                else user_name,
                character_name=(
                    _text_or(kept_header.get("character_name"), None) if kept_header else char_name
                ),
                create_date=parse_timestamp(kept_header.get("create_date"))
                if kept_header
                else None,
                chat_metadata=with_variables(
                    metadata if isinstance(metadata, Mapping) else {}, chat_vars
                ),
                header=kept_header,
                headerless=kept_header is None,
                entries=tuple(entries),
            )
        elif isinstance(legacy, Mapping):
            # Imported by an earlier version: its names and metadata go back as they came.
            metadata = legacy.get("chat_metadata")
            log = ChatLog(
                user_name=_text_or(legacy.get("user_name"), user_name),
                character_name=_text_or(legacy.get("character_name"), char_name),
                chat_metadata=with_variables(
                    metadata if isinstance(metadata, Mapping) else {}, chat_vars
                ),
                header=dict(legacy),
                entries=tuple(entries),
            )
        else:
            # A session with no line to name them (an empty one): the default user and the
            # session's character (as its turns would name them), never "unused".
            log = ChatLog(
                user_name=user_name or st_lines.DEFAULT_USER_NAME,
                character_name=char_name or session.settings.character or DEFAULT_CHARACTER,
                chat_metadata=with_variables({}, chat_vars),
                entries=tuple(entries),
            )
        return chat_to_jsonl_bytes(log)

    async def export_group(self, key: SessionKey) -> bytes:
        """The session's group as a SillyTavern group definition (``groups/<id>.json``): the
        imported file with its every field, the current members (as avatar file names),
        muted members, strategy, mode and self-responses written over it (see
        :func:`~engine.formats.st_group.export_definition`). NotFoundError for a session
        that plays fewer than two characters."""
        ids = await self._sessions.ids(key)
        settings = (await self._sessions.settings(ids.session_id)).settings
        group = group_of(settings.extra)
        if group is None:
            plays = "one character" if settings.character else "no character"
            raise NotFoundError(
                f"session {key.key} plays {plays}; a group needs two: /character add"
            )
        # A group never imported gets a new id as SillyTavern makes one: the time in ms.
        new_id = str(int(self._clock.now().timestamp() * 1000))
        obj = export_definition(group, settings.extra.get(GROUP_FILE_SETTING), new_id=new_id)
        return json.dumps(obj, ensure_ascii=False, indent=4).encode("utf-8")

    async def _hide(self, floor_id: int, page_ids: list[int], *, whole_floor: bool) -> None:
        """An imported hidden reply: the whole floor when its inputs were hidden too (as a
        deleted input hides its floor), else the reply's pages (its inputs stay in the story)."""
        async with self._storage.unit_of_work() as uow:
            if whole_floor:
                await uow.floors.set_hidden(floor_id, True)
                return
            for page_id in page_ids:
                await uow.pages.set_hidden(page_id, True)


def _is_input(entry: ChatEntry) -> bool:
    """Whether a chat line goes on a floor as input (a user's line or a visible note), not
    as a reply."""
    return entry.is_user or (entry.is_system and not entry.is_hidden)


def _note_role(entry: ChatEntry) -> MessageRole:
    """The role of a SillyTavern system note (``is_system`` with a message type)."""
    return "narrator" if entry.extra.get("type") == NARRATOR_TYPE else "system"


def _text_or(value: object, default: str | None) -> str | None:
    return value if isinstance(value, str) and value else default


def _count_entries(book: object) -> int:
    entries = book.get("entries") if isinstance(book, Mapping) else None
    return len(entries) if isinstance(entries, list | dict) else 0
