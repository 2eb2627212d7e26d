"""LLM profiles through the service: resolution order per slot, the per-turn snapshot, the
key encrypted at rest (never in the database in the clear) and used for the model call."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapters.llm import ChatModelPool
from adapters.secrets import FernetSecretCipher
from adapters.storage import SqlStorage
from engine.turns.api import MAIN_BRANCH
from engine.turns.profiles import LLMProfile, SecretKeyMissingError, environment_profile
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeToolCall
from tests.test_turns.conftest import KEY, Recorder, line

pytestmark = pytest.mark.timeout(60)
API_KEY = "sk-live-PLAINTEXT-must-not-be-stored-42"


def _profile(pid: str, base_url: str | None = None) -> LLMProfile:
    return LLMProfile(id=pid, model=f"model-{pid}", base_url=base_url)


async def test_resolution_order_per_slot(service: TavernService) -> None:
    for pid in ("s-slot", "r-slot", "s-any", "r-any"):
        await service.save_profile(KEY, _profile(pid))
    await service.bind_profile(KEY, scope="realm", slot="*", profile_id="r-any")
    snap = await service.profile_snapshot(KEY)
    assert snap.resolved("narrator").source == "realm+*"
    await service.bind_profile(KEY, scope="session", slot="*", profile_id="s-any")
    assert (await service.profile_snapshot(KEY)).resolved("narrator").source == "session+*"
    await service.bind_profile(KEY, scope="realm", slot="narrator", profile_id="r-slot")
    assert (await service.profile_snapshot(KEY)).profile("narrator").id == "r-slot"
    await service.bind_profile(KEY, scope="session", slot="narrator", profile_id="s-slot")
    snap = await service.profile_snapshot(KEY)
    assert snap.profile("narrator").id == "s-slot"
    assert snap.profile("director").id == "s-any"  # slots resolve independently


async def test_environment_is_the_last_resort(service: TavernService) -> None:
    snap = await service.profile_snapshot(KEY)
    assert snap.resolved("narrator").source == "environment"


async def test_storing_a_key_without_a_secret_is_refused(service: TavernService) -> None:
    with pytest.raises(SecretKeyMissingError):
        await service.save_profile(KEY, _profile("p"), api_key=API_KEY)


async def test_key_is_encrypted_at_rest_and_used_for_the_call(
    storage: SqlStorage, events: Recorder, fake: FakeOpenAIServer, tmp_path: Path
) -> None:
    cipher = FernetSecretCipher("a long random test secret for the cipher")
    pool = ChatModelPool()
    service = TavernService(
        storage,
        model_for=lambda p: pool.for_profile(p, cipher, {}),
        default_profile=environment_profile(provider="offline", base_url=None, model="x"),
        events=events,
        cipher=cipher,
    )
    await service.open_session(KEY)
    profile = LLMProfile(id="remote", model="fake-model", base_url=fake.base_url, max_retries=0)
    await service.save_profile(KEY, profile, api_key=API_KEY)
    await service.bind_profile(KEY, scope="session", slot="narrator", profile_id="remote")
    view = await service.respond(KEY, MAIN_BRANCH, [line("hello")])
    assert view.text == "echo: hello"
    assert fake.chat_requests[0].headers.get("Authorization") == f"Bearer {API_KEY}"
    stored = (await service.profile_snapshot(KEY)).profile("narrator")
    assert stored.api_key_encrypted and API_KEY not in stored.api_key_encrypted
    assert cipher.decrypt(stored.api_key_encrypted) == API_KEY
    await pool.aclose()
    await storage.close()
    files = _database_files(tmp_path)
    assert files
    for name, data in files.items():
        assert API_KEY.encode() not in data, name


def _database_files(folder: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in folder.glob("turns.db*")}


async def test_a_turn_keeps_its_profile_snapshot(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    for pid in ("first", "second"):
        await remote.save_profile(
            KEY, LLMProfile(id=pid, model=f"model-{pid}", base_url=fake.base_url, max_retries=0)
        )
    await remote.bind_profile(KEY, scope="session", slot="*", profile_id="first")
    await remote.configure(KEY, tools={"enabled": True})
    call = FakeToolCall(name="current_time", arguments="{}")
    fake.script(FakeReply(tool_calls=[call], latency_s=0.3), FakeReply(text="done"))
    turn = asyncio.create_task(remote.respond(KEY, MAIN_BRANCH, [line("time?")]))
    await fake.wait_requests(1)
    # rebinding while the turn runs changes the next turn, not this one
    await remote.bind_profile(KEY, scope="session", slot="*", profile_id="second")
    await turn
    assert [r.body["model"] for r in fake.chat_requests] == ["model-first", "model-first"]
    fake.script(FakeReply(text="next"))
    await remote.respond(KEY, MAIN_BRANCH, [line("again")])
    assert fake.chat_requests[-1].body["model"] == "model-second"
