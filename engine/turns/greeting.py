"""The character's greeting: SillyTavern opens a new chat with the card's first message.

:func:`greet` puts the card's ``first_mes`` (and each alternate greeting as another page, to
swipe through) on floor 1 of a branch that has no floor yet. The text is stored as written and
shown with ``{{char}}``/``{{user}}`` expanded; prompts expand it again for whoever is playing.
Front ends call it when a session starts (the console does); nothing greets on its own.
"""

from __future__ import annotations

from typing import Final

from engine.errors import EngineError
from engine.formats.cards import CharacterCard
from engine.macros import evaluate
from engine.ports import Storage
from engine.prompt.inputs import HistoryLine
from engine.prompt.macro_port import macro_context
from engine.timeline.history import HistoryService
from engine.timeline.service import TimelineService
from engine.timeline.values import Branch, NewMessage
from engine.turns.api import ReplyView, SessionKey
from engine.turns.parsed_assets import load_assets
from engine.turns.views import reply_view
from engine.variables import store

MAX_GREETINGS: Final = 20
"""Greetings (first message plus alternates) put on the first floor at most."""


def greeting_line(card: CharacterCard | None) -> HistoryLine | None:
    """The greeting as the first message of a chat that has none yet, as :func:`greet` would
    store it (floor 1, its first page: ``first_mes``, raw; the prompt expands its macros), so
    a dry run of a new chat shows SillyTavern's first prompt. None when the card has none."""
    if card is None or not card.first_mes.strip():
        return None
    return HistoryLine(text=card.first_mes, is_user=False, name=card.name, floor=1)


async def greet(
    storage: Storage,
    timeline: TimelineService,
    history: HistoryService,
    key: SessionKey,
    session_id: int,
    target: Branch,
    *,
    user_name: str,
) -> ReplyView | None:
    """Floor 1 of ``target`` with the card's greetings, when the branch is empty and the card
    has one. The caller holds the branch's turn lock."""
    async with storage.unit_of_work() as uow:
        session = await uow.sessions.get(session_id)
        assets = await load_assets(uow, session)
        # Any floor, a failed one too (its message stays in the chat), means not empty.
        head = await store.next_seq(uow, await store.lineage_of(uow, target)) - 1
    card = assets.card
    if card is None or head > 0 or greeting_line(card) is None:
        return None
    greetings = [card.first_mes, *card.alternate_greetings][:MAX_GREETINGS]
    context = macro_context(assets.character, user_name=user_name)
    floor = await timeline.open_floor(target.id, [])
    try:
        await timeline.start_generating(floor.id)
        for text in greetings:
            page = await timeline.add_page(floor.id)
            shown = evaluate(text, context, phase="preview").text
            message = NewMessage(role="assistant", raw=text, display=shown, speaker_name=card.name)
            await timeline.commit_page(page.id, messages=[message], meta={"greeting": True})
        if len(greetings) > 1:
            await timeline.activate_page(floor.id, 1)
    except EngineError as exc:
        current = await history.floor(floor.id)
        if current.state in ("draft", "generating"):
            await timeline.fail_floor(floor.id, f"greeting failed: {exc}")
        raise
    view = await history.floor_view(target.id, floor.seq)
    return reply_view(key, view)
