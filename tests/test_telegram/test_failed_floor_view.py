"""A branch whose latest floor failed (issue 12): switching to it says so instead of showing
the player's own message as if it were the reply, and its 🔄 retries the floor (issue 13)."""

from __future__ import annotations

import pytest

from engine.timeline.values import NewMessage
from engine.turns.api import MAIN_BRANCH
from tests.test_telegram.real_engine import RealHarness, real, telegram_key

__all__ = ["real"]
pytestmark = pytest.mark.timeout(90)


async def test_switching_to_a_branch_whose_last_message_failed(real: RealHarness) -> None:
    tg = real.tg
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    first = await real.reply_to(chat, ann, "one")
    key = telegram_key(chat)
    svc = real.svc
    main = await svc.parts.sessions.branch(
        (await svc.parts.sessions.ids(key)).session_id, MAIN_BRANCH
    )
    floor = await svc.timeline.open_floor(main.id, [NewMessage(role="user", raw="lost words")])
    await svc.timeline.fail_floor(floor.id, "interrupted")
    await tg.send_text(chat, ann, "/branch", reply_to=first.message_id)
    await real.wait_text(chat["id"], lambda t: t.startswith("Branched"))

    await tg.send_text(chat, ann, "/branches")
    listing = await real.wait_text(chat["id"], lambda t: t.startswith("Branches"))
    assert listing.reply_markup is not None
    buttons = {
        b["text"]: b["callback_data"] for r in listing.reply_markup["inline_keyboard"] for b in r
    }
    main_button = next(data for text, data in buttons.items() if text.startswith("main"))
    await tg.press(chat, ann, listing.message_id, main_button)
    note = await real.wait_text(chat["id"], lambda t: "no reply" in t)
    assert (note.text or "").startswith("Branch main: the message of floor 2 got no reply")
    history = await svc.history(key, MAIN_BRANCH)
    assert [(v.floor, v.failed, v.text) for v in history][-1] == (2, True, "lost words")
    # the note carries 🔄 (issue 13): pressing it retries the failed floor into the note
    assert note.reply_markup is not None
    retry = note.reply_markup["inline_keyboard"][0][0]
    assert retry["text"] == "🔄"
    await tg.press(chat, ann, note.message_id, retry["callback_data"])
    await tg.wait_until(lambda: "◀️" in str(note.reply_markup))  # the reply's swipe row
    assert note.text == "Reply 2: lost words"
    history = await svc.history(key, MAIN_BRANCH)
    assert [(v.floor, v.failed, v.text) for v in history][-1] == (2, False, "Reply 2: lost words")
