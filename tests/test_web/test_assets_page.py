"""The assets page: the realm's assets listed (those in use marked), an upload of each kind of
SillyTavern file through the engine's import (the kind told from the file or named, a wrong or
unknown file refused in one line), downloads of an asset and of a branch as a chat, and the
refusals (read-only token, another realm, no token) that store nothing."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest

from adapters.web import pages_assets
from tests.conftest import ST_FIXTURES
from tests.test_web.played import PlayedServer

pytestmark = pytest.mark.timeout(120)
TIMEOUT = aiohttp.ClientTimeout(total=30)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
        yield session


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _upload(
    http: aiohttp.ClientSession,
    played: PlayedServer,
    name: str,
    data: bytes,
    *,
    token: str | None = None,
    kind: str = "",
) -> tuple[int, dict[str, str]]:
    form = aiohttp.FormData()
    form.add_field("kind", kind)
    form.add_field("file", data, filename=name, content_type="application/octet-stream")
    url = f"{played.url}/sessions/{played.session_id}/assets"
    async with http.post(
        url, data=form, headers=_auth(token or played.token), allow_redirects=False
    ) as response:
        await response.read()
        query = parse_qs(urlsplit(response.headers.get("Location", "")).query)
        return response.status, {k: v[0] for k, v in query.items()}


def _assets(html: str) -> set[str]:
    return set(re.findall(r'data-asset="([^"]+)"', html))


async def _listed(http: aiohttp.ClientSession, played: PlayedServer) -> str:
    url = f"{played.url}/sessions/{played.session_id}/assets"
    async with http.get(url, headers=_auth(played.token)) as response:
        assert response.status == 200
        return await response.text()


async def test_the_list_marks_what_the_session_uses(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    html = await _listed(http, played)
    assert 'data-asset="card:Mira"' in html and 'data-asset="worldbook:harbor"' in html
    assert html.count("in use here") == 2
    assert 'enctype="multipart/form-data"' in html  # the admin sees the upload form


async def test_uploads_of_each_kind_are_imported_and_used(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    preset = (ST_FIXTURES / "preset_cc_ST_Default.json").read_bytes()
    status, query = await _upload(http, played, "Default.json", preset)
    assert status == 303 and query.get("done") == "imported preset 'Default'", query
    book = (ST_FIXTURES / "worldinfo_Eldoria.json").read_bytes()
    status, query = await _upload(http, played, "Eldoria.json", book, kind="worldbook")
    assert status == 303 and "imported worldbook" in query["done"]
    card = (ST_FIXTURES / "card_v2v3_Seraphina.png").read_bytes()
    status, query = await _upload(http, played, "Seraphina.png", card)
    assert status == 303 and "imported card" in query["done"]
    html = await _listed(http, played)
    for asset in ("preset:Default", "worldbook:Eldoria", "card:Seraphina"):
        assert f'data-asset="{asset}"' in html
    # The card imported last is the session's character again.
    info = played.call(played.app.service.session_info(played.front.key))
    assert info.character == "Seraphina" and info.preset == "Default"
    # Put Mira back for the other tests of this module.
    played.call(played.app.service.bind_asset(played.front.key, "card", "Mira"))


async def test_a_wrong_or_unknown_file_is_refused_in_one_line(
    http: aiohttp.ClientSession, played: PlayedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _assets(await _listed(http, played))
    book = (ST_FIXTURES / "worldinfo_Eldoria.json").read_bytes()
    status, query = await _upload(http, played, "Eldoria.json", book, kind="preset")
    assert status == 303 and "this is a world book, not a Chat Completion preset" in query["error"]
    status, query = await _upload(http, played, "what.json", b'{"nothing": 1}')
    assert status == 303 and "cannot tell what this file is" in query["error"]
    status, query = await _upload(http, played, "broken.json", b'{"entries": 5}')
    assert status == 303 and query["error"].startswith("broken.json")
    monkeypatch.setattr(pages_assets, "MAX_UPLOAD_BYTES", 10)
    status, query = await _upload(http, played, "big.json", b'{"entries": {}}')
    assert status == 303 and "MAX_UPLOAD_BYTES=10" in query["error"]
    assert all("\n" not in value for value in query.values())
    assert _assets(await _listed(http, played)) == before


async def test_refused_uploads_store_nothing(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    regex = json.dumps({"scriptName": "shout", "findRegex": "/a/g", "replaceString": "A"})
    reader = played.issue("read", "console:local")
    status, _ = await _upload(http, played, "shout.json", regex.encode(), token=reader)
    assert status == 403
    stranger = played.issue("admin", "discord:other")
    status, _ = await _upload(http, played, "shout.json", regex.encode(), token=stranger)
    assert status == 404
    assert 'data-asset="regex:shout"' not in await _listed(http, played)
    status, query = await _upload(http, played, "shout.json", regex.encode())
    assert status == 303 and "imported regex" in query["done"]


async def test_downloads_of_an_asset_and_of_a_branch(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    base = f"{played.url}/sessions/{played.session_id}"
    async with http.get(f"{base}/assets/worldbook/harbor", headers=_auth(played.token)) as r:
        assert r.status == 200 and "attachment" in r.headers["Content-Disposition"]
        book = json.loads(await r.read())
    assert book["entries"]["0"]["content"].startswith("The lighthouse has a red lamp")
    async with http.get(f"{base}/chats/main", headers=_auth(played.token)) as r:
        lines = (await r.text()).splitlines()
    assert r.status == 200 and len(lines) > 10
    assert any("lighthouse, night 3" in json.loads(line).get("mes", "") for line in lines)
    async with http.get(f"{base}/assets/card/Nobody", headers=_auth(played.token)) as r:
        assert r.status == 404
    async with http.get(f"{base}/assets/profile/x", headers=_auth(played.token)) as r:
        assert r.status == 404
    async with http.get(f"{base}/chats/main", allow_redirects=False) as r:
        assert r.status == 303 and r.headers["Location"] == "/login"  # no token: log in first


async def test_uploads_of_a_regex_script_and_a_chat(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    script = {
        "scriptName": "Shout",
        "findRegex": "/hello/gi",
        "replaceString": "HELLO",
        "placement": [2],
        "disabled": False,
    }
    status, query = await _upload(http, played, "shout.json", json.dumps(script).encode())
    assert status == 303 and "regex" in query.get("done", ""), query
    chat = (ST_FIXTURES / "chat_legacy_Aqua_1673181146000.jsonl").read_bytes()
    status, query = await _upload(http, played, "Aqua.jsonl", chat)
    assert status == 303, query
    assert query.get("done", "").startswith("imported chat Aqua.jsonl as branch import-Aqua")
    html = await _listed(http, played)
    assert 'data-asset="regex:' in html
    pages = played.call(played.app.service.page_texts(played.front.key, "import-Aqua", 1))
    assert pages and all(pages), pages
