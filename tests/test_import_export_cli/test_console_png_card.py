"""A PNG card imported in a console session keeps its picture: ``tavernbot export card`` gives
a real PNG back (the original's image chunks, the card's data), and the session's native
archive carries the picture with the bound card."""

from __future__ import annotations

import asyncio
import base64
import io
import json

from adapters.console.frontend import ConsoleFrontend
from adapters.llm import OfflineChatModel
from adapters.storage import open_storage
from engine.formats.cards import AVATAR_KEY, card_to_json, parse_card
from engine.formats.png import read_chunks
from engine.turns.api import SessionKey
from engine.turns.profiles import environment_profile
from engine.turns.service import TavernService
from tests.conftest import SHARED
from tests.test_import_export_cli.support import Cli

CARD = SHARED / "realworld" / "cards" / "stbl_Keegan_v3.png"
KEY = SessionKey(platform="console", realm="local", key="pictures")


def _image(png: bytes) -> list[tuple[bytes, bytes]]:
    """The PNG's chunks other than text: the picture itself (IHDR, IDAT ..., IEND)."""
    return [(c.type, c.data) for c in read_chunks(png, source="x") if c.type != b"tEXt"]


async def _import_in_console(cli: Cli) -> str:
    storage = await open_storage(f"sqlite+aiosqlite:///{cli.db}")
    model = OfflineChatModel(announce=False)
    service = TavernService(
        storage,
        model_for=lambda p: model,
        default_profile=environment_profile(provider="offline", base_url=None, model="x"),
    )
    await service.start()
    try:
        await service.open_session(KEY)
        out = io.StringIO()
        console = ConsoleFrontend(service=service, key=KEY, out=out, jsonl=True)
        assert await console.handle_line(f"/import {CARD}")
        row = json.loads(out.getvalue().splitlines()[-1])
        assert row["type"] == "info", row
        return str((await service.session_info(KEY)).character)
    finally:
        await service.aclose()
        await storage.close()


def test_a_png_card_imported_in_the_console_exports_as_the_same_picture(cli: Cli) -> None:
    name = asyncio.run(_import_in_console(cli))
    original = CARD.read_bytes()
    exported_path = cli.dir / "card.png"
    cli.ok("export", "card", name, "-o", exported_path)
    exported = exported_path.read_bytes()
    assert _image(exported) == _image(original)
    assert any(t == b"IDAT" for t, _ in _image(exported))
    assert card_to_json(parse_card(exported, source="a")) == card_to_json(
        parse_card(original, source="b")
    )
    archive = json.loads(cli.ok("export", "chat", "--session", KEY.key, "--format", "native"))
    stored = next(a for a in archive["assets"] if a["kind"] == "card")
    picture = base64.b64decode(stored["data"][AVATAR_KEY])
    assert _image(picture) == _image(original)
