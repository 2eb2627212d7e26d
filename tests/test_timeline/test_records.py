"""Sessions, settings, platform links and hiding, assets, history and start-up recovery."""

from __future__ import annotations

import pytest

from engine.errors import LimitExceededError
from engine.timeline.assets import AssetService
from engine.timeline.checks import MAX_INPUTS_PER_FLOOR
from engine.timeline.errors import InvalidNameError, TimelineNotFoundError
from engine.timeline.history import MAX_HISTORY
from engine.timeline.service import INTERRUPTED, MAX_PAGES_PER_FLOOR
from engine.timeline.values import MAX_NAME_LENGTH, NewMessage, SessionSettings
from engine.variables.values import MAX_KEY_LENGTH, MAX_WRITES_PER_PAGE, Mutation
from tests.test_storage.support import World, put


async def test_get_or_create_a_session_and_its_settings(storage) -> None:
    world = World(storage)
    first = await world.timeline.open_session("telegram", "-100", "-100")
    again = await world.timeline.open_session("telegram", "-100", "-100")
    assert first.created and not again.created
    assert again.session.id == first.session.id and again.main.name == "main"
    assert first.session.settings == SessionSettings()
    settings = SessionSettings(
        character="Seraphina",
        worldbooks=("lore",),
        regex_sets=("clean",),
        prompt_mode="native",
        macro_mode="full",
        reply_policy="mention",
        extra={"future_key": [1, 2]},
    )
    updated = await world.timeline.update_settings(first.session.id, settings)
    assert updated.settings == settings
    found = await world.timeline.find_session("telegram", "-100")
    assert found is not None and found.settings.extra == {"future_key": [1, 2]}
    assert await world.timeline.find_session("discord", "-100") is None
    with pytest.raises(TimelineNotFoundError, match="no branch named 'nope'"):
        await world.timeline.branch(first.session.id, "nope")


async def test_platform_messages_map_back_and_deletions_only_hide(storage) -> None:
    world = World(storage)
    opened = await world.session()
    sid, main = opened.session.id, opened.main.id
    floor = await world.timeline.open_floor(
        main, [NewMessage(role="user", raw="hello", platform_ref="m1")]
    )
    await world.timeline.start_generating(floor.id)
    page = await world.timeline.add_page(floor.id)
    await world.timeline.commit_page(
        page.id, messages=[NewMessage(role="assistant", raw="hi!", platform_ref="m2")]
    )
    # Inputs with a platform reference are linked when recorded; replies after sending.
    inbound = await world.history.resolve_message(sid, "m1")
    assert inbound is not None
    assert (inbound.floor_id, inbound.page_id, inbound.role) == (floor.id, None, "user")
    await world.history.link_message(
        sid, "m2", floor_id=floor.id, page_id=page.id, role="assistant"
    )
    link = await world.history.resolve_message(sid, "m2")
    assert link is not None and (link.branch_id, link.floor_id, link.page_id) == (
        main,
        floor.id,
        page.id,
    )
    assert await world.history.resolve_message(sid, "unknown") is None
    await world.history.hide_message(sid, "m2")
    view = await world.history.floor_view(main, 1)
    assert view.pages[0].hidden and view.replies[0].hidden and not view.floor.hidden
    assert view.replies[0].raw == "hi!"  # still there, only hidden
    await world.history.hide_message(sid, "m1")
    view = await world.history.floor_view(main, 1)
    assert view.floor.hidden and view.inputs[0].hidden
    assert await world.history.hide_message(sid, "unknown") is None


async def test_assets_are_unique_per_realm_kind_and_name(storage) -> None:
    world = World(storage)
    a = await world.session("a", realm="r1")
    b = await world.session("b", realm="r2")
    assets = AssetService(storage)
    await assets.put(a.realm.id, "card", "Sera", {"name": "Sera", "v": 1})
    await assets.put(a.realm.id, "card", "Sera", {"name": "Sera", "v": 2})
    await assets.put(a.realm.id, "preset", "Sera", {"temp": 1})
    await assets.put(b.realm.id, "card", "Sera", {"other": True})
    assert (await assets.get(a.realm.id, "card", "Sera")).data == {"name": "Sera", "v": 2}
    assert [(x.kind, x.name) for x in await assets.list(a.realm.id)] == [
        ("card", "Sera"),
        ("preset", "Sera"),
    ]
    assert [x.data for x in await assets.list(b.realm.id, "card")] == [{"other": True}]
    assert await assets.delete(a.realm.id, "preset", "Sera")
    assert not await assets.delete(a.realm.id, "preset", "Sera")
    with pytest.raises(TimelineNotFoundError, match="no preset named 'Sera'"):
        await assets.get(a.realm.id, "preset", "Sera")
    with pytest.raises(InvalidNameError, match="asset kind 'chat'"):
        await assets.put(a.realm.id, "chat", "x", {})  # type: ignore[arg-type]


async def test_history_pages_through_the_branch(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    for n in range(1, 8):
        await world.turn(main, text=f"r{n}")
    views = await world.history.history(main, limit=3)
    assert [v.floor.seq for v in views] == [5, 6, 7]
    assert [v.replies[0].raw for v in views] == ["r5", "r6", "r7"]
    older = await world.history.history(main, limit=3, before=5)
    assert [v.floor.seq for v in older] == [2, 3, 4]
    assert views[0].active is not None and views[0].active.number == 1
    with pytest.raises(LimitExceededError, match="outside 1..1000") as caught:
        await world.history.history(main, limit=MAX_HISTORY + 1)
    assert caught.value.limit == "MAX_HISTORY"


async def test_recover_fails_interrupted_generations(storage) -> None:
    world = World(storage)
    main = (await world.session("one")).main.id
    other = (await world.session("two")).main.id
    floor = await world.timeline.open_floor(main)
    await world.timeline.start_generating(floor.id)
    await world.timeline.add_page(floor.id)
    done = await world.turn(other, [put("branch", "x", 1)])
    regen = await world.timeline.add_page(done.floor.id)
    failed = await world.timeline.recover()
    assert [f.id for f in failed] == [floor.id]
    assert (await world.history.floor(floor.id)).error == INTERRUPTED
    assert [p.status for p in await world.history.pages(done.floor.id)] == ["committed", "failed"]
    assert (await world.history.floor(done.floor.id)).state == "committed"
    assert regen.number == 2
    assert await world.timeline.recover() == []
    # Both branches can go on.
    await world.turn(main)
    await world.regenerate(done.floor.id)


async def test_named_limits(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    with pytest.raises(LimitExceededError) as caught:
        await world.timeline.fork(main, name="x" * (MAX_NAME_LENGTH + 1))
    assert caught.value.limit == "MAX_NAME_LENGTH"
    with pytest.raises(InvalidNameError):
        await world.timeline.fork(main, name="  ")
    too_many = [NewMessage(role="user", raw="x")] * (MAX_INPUTS_PER_FLOOR + 1)
    with pytest.raises(LimitExceededError) as caught:
        await world.timeline.open_floor(main, too_many)
    assert caught.value.limit == "MAX_INPUTS_PER_FLOOR"
    with pytest.raises(LimitExceededError) as caught:
        await world.variables.set(main, "chat", "k" * (MAX_KEY_LENGTH + 1), 1)
    assert caught.value.limit == "MAX_KEY_LENGTH"
    floor = await world.timeline.open_floor(main)
    await world.timeline.start_generating(floor.id)
    page = await world.timeline.add_page(floor.id)
    writes = [Mutation.set("branch", "k", n) for n in range(MAX_WRITES_PER_PAGE + 1)]
    with pytest.raises(LimitExceededError) as caught:
        await world.timeline.commit_page(page.id, writes=writes)
    assert caught.value.limit == "MAX_WRITES_PER_PAGE"
    await world.timeline.commit_page(page.id)
    async with storage.unit_of_work() as uow:  # fill the floor up to the limit cheaply
        for number in range(2, MAX_PAGES_PER_FLOOR + 1):
            extra = await uow.pages.add(floor_id=floor.id, number=number, meta={})
            await uow.pages.compare_and_set(extra.id, expected="pending", status="failed")
    with pytest.raises(LimitExceededError) as caught:
        await world.timeline.add_page(floor.id)
    assert caught.value.limit == "MAX_PAGES_PER_FLOOR"
