"""Documents: cards, world books, presets and regex files imported, malformed files explained."""

from __future__ import annotations

import json
import struct
import zlib

import pytest

from adapters.telegram.imports import detect
from engine.errors import FormatError
from tests.test_telegram.conftest import Harness

CARD = {  # V2 cards repeat the V1 fields at the top level
    "name": "Mira",
    "first_mes": "Welcome, traveller.",
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {"name": "Mira", "first_mes": "Welcome, traveller.", "alternate_greetings": ["Hi"]},
}


def png(chunks: list[tuple[bytes, bytes]]) -> bytes:
    out = b"\x89PNG\r\n\x1a\n"
    for kind, body in chunks + [(b"IEND", b"")]:
        out += struct.pack(">I", len(body)) + kind + body
        out += struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    return out


async def _private(harness: Harness) -> tuple[dict, dict]:
    await harness.start()
    alice = harness.server.new_user("Alice")
    return alice, harness.server.private_chat(alice)


async def test_card_sent_as_document_is_imported_and_becomes_the_character(
    harness: Harness,
) -> None:
    alice, chat = await _private(harness)
    srv = harness.server
    data = json.dumps(CARD).encode()
    await srv.send_document(
        chat, alice, filename="mira.json", data=data, mime_type="application/json"
    )
    done = await harness.wait_text(chat["id"], lambda t: t.startswith("Imported"))
    assert done.text.startswith("Imported character card “Mira” and bound it to this chat.")
    assert "• greetings: 2" in done.text and f"• bytes: {len(data)}" in done.text
    key = next(iter(harness.service.sessions))
    assert harness.service.assets[(key.realm, "card", "Mira")] == data
    await srv.send_text(chat, alice, "/character")
    assert await harness.wait_text(chat["id"], lambda t: t.startswith("Character: Mira"))


@pytest.mark.parametrize(
    ("filename", "payload", "kind", "fact"),
    [
        (
            "lore.json",
            {"entries": {"0": {"key": ["dragon"]}, "1": {"key": ["sword"]}}},
            "world book",
            "• entries: 2",
        ),
        (
            "preset.json",
            {"prompts": [{"identifier": "main"}], "prompt_order": []},
            "preset",
            "• prompts: 1",
        ),
        (
            "regex.json",
            [{"scriptName": "a", "findRegex": "/x/g"}],
            "regex scripts",
            "• scripts: 1",
        ),
    ],
)
async def test_other_assets_are_recognised(
    harness: Harness, filename, payload, kind, fact
) -> None:
    alice, chat = await _private(harness)
    await harness.server.send_document(
        chat, alice, filename=filename, data=json.dumps(payload).encode()
    )
    done = await harness.wait_text(chat["id"], lambda t: t.startswith("Imported"))
    assert done.text.startswith(f"Imported {kind}")
    assert fact in done.text


async def test_malformed_json_gets_a_clear_error(harness: Harness) -> None:
    alice, chat = await _private(harness)
    await harness.server.send_document(
        chat, alice, filename="broken.json", data=b'{"name": "X",\n'
    )
    error = await harness.wait_text(chat["id"], lambda t: t.startswith("⚠️"))
    assert error.text.startswith("⚠️ Could not import broken.json: broken.json: not valid JSON")
    assert "line 2" in error.text
    assert not [c for c in harness.service.calls if c[0] == "import_asset"]


async def test_unrecognised_json_says_what_was_expected(harness: Harness) -> None:
    alice, chat = await _private(harness)
    await harness.server.send_document(chat, alice, filename="what.json", data=b'{"hello": 1}')
    error = await harness.wait_text(chat["id"], lambda t: t.startswith("⚠️"))
    assert "could not tell what this file is" in error.text and "'first_mes'" in error.text


async def test_png_without_card_data_is_refused(harness: Harness) -> None:
    alice, chat = await _private(harness)
    image = png([(b"IHDR", b"\x00" * 13)])
    await harness.server.send_document(
        chat, alice, filename="cat.png", data=image, mime_type="image/png"
    )
    error = await harness.wait_text(chat["id"], lambda t: t.startswith("⚠️"))
    assert "no character card inside" in error.text


async def test_too_large_document_is_refused_before_download(
    harness: Harness, monkeypatch
) -> None:
    monkeypatch.setattr("adapters.telegram.routers.documents.MAX_IMPORT_BYTES", 10)
    alice, chat = await _private(harness)
    await harness.server.send_document(
        chat, alice, filename="big.json", data=b"{" + b" " * 20 + b"}"
    )
    error = await harness.wait_text(chat["id"], lambda t: "too large" in t)
    assert error.text.startswith("big.json: too large to import")
    assert not harness.server.calls_of("getFile")


def test_png_card_is_detected_by_its_text_chunk() -> None:
    card = png([(b"IHDR", b"\x00" * 13), (b"tEXt", b"chara\x00" + b"e30=")])
    assert detect("mira.png", card).kind == "card"
    with pytest.raises(FormatError, match="only be a character card"):
        detect("mira.png", card, "preset")
    with pytest.raises(FormatError, match="cut short"):
        detect("cut.png", card[:30])


def test_caption_names_the_kind() -> None:
    assert detect("x.json", b'{"foo": 1}', "/import preset").kind == "preset"
    assert detect("x.json", b'{"entries": {}}', "lorebook").kind == "worldbook"


def test_chat_jsonl_lines_are_checked() -> None:
    assert detect("c.jsonl", b'{"user_name": "A"}\n{"mes": "hi"}\n').facts == {"lines": 2}
    with pytest.raises(FormatError, match="line 2 is not valid JSON"):
        detect("c.jsonl", b'{"user_name": "A"}\n{oops\n')
    with pytest.raises(FormatError, match="empty"):
        detect("e.json", b"")
