"""Every ``type`` the console prints with ``--jsonl`` is one the README lists (issue 16:
``memories`` was printed but not documented)."""

from __future__ import annotations

import io
import json
import re

from adapters.console.frontend import ConsoleFrontend
from engine.turns.api import MemoryView, SessionKey
from tests.conftest import ROOT
from tests.fakes.roleplay import FullFakeRoleplayService

KEY = SessionKey(platform="console", realm="local", key="documented")


def _documented_types() -> set[str]:
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    found = re.search(r"With `--jsonl` every output is one JSON line \(([^)]*)\)", text)
    assert found, "the README's console paragraph lists the --jsonl line types"
    return set(re.findall(r"`([a-z_]+)`", found.group(1).split(";")[0]))


async def test_every_jsonl_type_printed_is_listed_in_the_readme() -> None:
    service = FullFakeRoleplayService()
    await service.open_session(KEY)
    service.remember(
        KEY.realm,
        MemoryView(id="m1", kind="fact", text="Ann owes a debt", scope="chat", importance=0.7),
    )
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, user="Ann", out=out, jsonl=True)
    for line in ("hello", "/vars", "/memory", "/forget m1", "/forget", "/memory debt"):
        assert await console.handle_line(line)
    printed = {json.loads(row)["type"] for row in out.getvalue().splitlines()}
    assert {"reply", "vars", "memories", "info", "error"} <= printed
    assert printed <= _documented_types()
