"""``[database] lease_heartbeat_s`` and ``lease_expiry_s``: defaults, checks, and the lease
of the service that gets them."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from adapters.llm import OfflineChatModel
from adapters.storage import open_storage
from bot.config import DatabaseSettings, load_settings
from engine.timeline.leases import LEASE_EXPIRY_S, LEASE_HEARTBEAT_S
from engine.turns.profiles import environment_profile
from engine.turns.service import TavernService


def test_the_defaults_are_the_engines() -> None:
    settings = DatabaseSettings()
    assert (settings.lease_heartbeat_s, settings.lease_expiry_s) == (
        LEASE_HEARTBEAT_S,
        LEASE_EXPIRY_S,
    )
    assert 0 < LEASE_HEARTBEAT_S < LEASE_EXPIRY_S


@pytest.mark.parametrize(("beat", "expiry"), [(5.0, 5.0), (9.0, 3.0), (0.0, 3.0), (1.0, -1.0)])
def test_a_heartbeat_must_be_positive_and_below_the_expiry(beat: float, expiry: float) -> None:
    with pytest.raises(ValidationError):
        DatabaseSettings(lease_heartbeat_s=beat, lease_expiry_s=expiry)


async def test_the_service_leases_with_the_configured_timings(tmp_path: Path) -> None:
    config = tmp_path / "tavernbot.toml"
    config.write_text("[database]\nlease_heartbeat_s = 0.5\nlease_expiry_s = 4\n")
    settings = load_settings(config, environ={})
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    offline = OfflineChatModel(announce=False)
    try:
        service = TavernService(
            storage,
            model_for=lambda _: offline,
            default_profile=environment_profile(provider="offline", base_url=None, model="x"),
            lease_heartbeat_s=settings.database.lease_heartbeat_s,
            lease_expiry_s=settings.database.lease_expiry_s,
        )
        assert (service.leases.heartbeat_s, service.leases.expiry_s) == (0.5, 4.0)
        await service.start()
        async with storage.read() as uow:
            (lease,) = await uow.leases.of_owners([service.leases.owner])
        assert (lease.expires_at - lease.heartbeat_at).total_seconds() == 4.0
        await service.release_lease()
        async with storage.read() as uow:
            assert await uow.leases.of_owners([service.leases.owner]) == []
        await service.aclose()
    finally:
        await storage.close()
