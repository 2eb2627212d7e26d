"""The first start's token and the configured token."""

from __future__ import annotations

from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from adapters.llm import OfflineChatModel
from adapters.storage import open_storage
from adapters.storage.web_repo import SqlWebTokens
from adapters.web.app import build_web_app
from adapters.web.auth import TOKEN_BYTES, first_token
from adapters.web.context import WebOptions, exposure_warning
from engine.turns.profiles import environment_profile
from engine.turns.service import TavernService


async def test_first_token_is_made_once_and_works(tmp_path: Path) -> None:
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path}/first.db")
    model = OfflineChatModel(announce=False)
    service = TavernService(
        storage,
        model_for=lambda p: model,
        default_profile=environment_profile(provider="offline", base_url=None, model="x"),
    )
    tokens = SqlWebTokens(storage)
    token = await first_token(tokens)
    assert token is not None and len(token) >= TOKEN_BYTES
    assert await first_token(tokens) is None
    app = build_web_app(service, storage, WebOptions(token="configured-secret"))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        for good in (token, "configured-secret"):
            response = await client.get(
                "/api/sessions", headers={"Authorization": f"Bearer {good}"}
            )
            assert response.status == 200
        bad = await client.get("/api/sessions", headers={"Authorization": "Bearer configured"})
        assert bad.status == 401
    await storage.close()


def test_exposure_warning_only_for_plain_http_off_loopback() -> None:
    assert exposure_warning(WebOptions()) is None
    warning = exposure_warning(WebOptions(host="0.0.0.0"))
    assert warning is not None and "0.0.0.0" in warning
    assert exposure_warning(WebOptions(host="0.0.0.0", behind_proxy=True)) is None
    assert exposure_warning(WebOptions(host="0.0.0.0", tls_cert="c", tls_key="k")) is None
