"""A turn's prompt and regex warnings are kept in its page's meta, at most MAX_META_WARNINGS."""

from __future__ import annotations

import json

from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from engine.turns.workflow import MAX_META_WARNINGS
from tests.test_turns.conftest import KEY, line


async def _meta(service: TavernService) -> dict[str, object]:
    ids = await service.parts.sessions.ids(KEY)
    branch = await service.parts.sessions.branch(ids.session_id, MAIN_BRANCH)
    async with service.storage.unit_of_work() as uow:
        floor = await uow.floors.latest(branch.id)
        assert floor is not None
        pages = await uow.pages.of_floors([floor.id])
    return dict(pages[-1].meta)


async def test_the_page_keeps_the_turns_warnings_up_to_the_limit(service: TavernService) -> None:
    # Each script's pattern cannot compile: every one is inert and warns, more than the meta
    # keeps.
    scripts = [
        {
            "scriptName": f"broken {i}",
            "findRegex": f"/(unclosed{i}/",
            "replaceString": "",
            "placement": [1],
            "promptOnly": True,
        }
        for i in range(MAX_META_WARNINGS + 10)
    ]
    await service.import_asset(KEY, "regex", "broken.json", json.dumps(scripts).encode())
    view = await service.respond(KEY, MAIN_BRANCH, [line("hello")])
    assert view.floor == 1 and view.text
    warnings = _meta_warnings(await _meta(service))
    assert len(warnings) == MAX_META_WARNINGS
    assert warnings[0].startswith("regex script 'broken 0': cannot compile")


def _meta_warnings(meta: dict[str, object]) -> list[str]:
    found = meta.get("warnings")
    assert isinstance(found, list)
    return [str(w) for w in found]
