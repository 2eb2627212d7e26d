"""``/tools`` through the real aiogram client: only group admins see and change whether the
model's tools may write global variables (issue 12)."""

from __future__ import annotations

from adapters.telegram.routers.commands import COMMANDS, GROUP_READS
from tests.test_telegram.conftest import Harness


async def test_only_admins_allow_global_tool_writes(harness: Harness) -> None:
    await harness.start()
    srv, service = harness.server, harness.service
    owner, bob = srv.new_user("Olga"), srv.new_user("Bob")
    group = srv.group("Tavern", owner=owner, members=(bob,))
    await srv.send_text(group, owner, "/start")
    await harness.wait_text(group["id"], lambda t: t.startswith("Session ready"))
    key = next(iter(service.sessions))

    await srv.send_text(group, bob, "/tools global on")
    await harness.wait_text(group["id"], lambda t: t == "Only group admins can use /tools here.")
    assert not service.sessions[key].tools_global_writes
    assert not [c for c in service.calls if c[0] == "set_tools_global_writes"]

    await srv.send_text(group, owner, "/tools")
    await harness.wait_text(group["id"], lambda t: "global: refused" in t)
    await srv.send_text(group, owner, "/tools global maybe")
    await harness.wait_text(group["id"], lambda t: t.startswith("Usage: /tools"))
    await srv.send_text(group, owner, "/tools global on")
    await harness.wait_text(group["id"], lambda t: t.startswith("Set.") and "global" in t)
    assert service.sessions[key].tools_global_writes
    await srv.send_text(group, owner, "/tools global off")
    await harness.wait_text(group["id"], lambda t: t.startswith("Set.") and "refused" in t)
    assert not service.sessions[key].tools_global_writes
    assert "tools" in COMMANDS and "tools" not in GROUP_READS
