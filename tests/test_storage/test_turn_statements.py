"""The turn's prebuilt statements: built once per shape, at most STATEMENT_CACHE_SIZE shapes
kept per builder, and each shape gives the rows the ad hoc statement gave."""

from __future__ import annotations

from adapters.storage import SqlStorage
from adapters.storage.turn_statements import (
    STATEMENT_CACHE_SIZE,
    assets_named,
    floor_compare_and_set,
    values_of_owners,
)
from tests.test_storage.support import World


def test_each_builder_keeps_at_most_the_limit_of_shapes() -> None:
    for builder in (assets_named, values_of_owners):
        builder.cache_clear()
        assert builder(2) is builder(2)  # built once per shape
        for n in range(1, STATEMENT_CACHE_SIZE + 20):
            builder(n)
        assert builder.cache_info().currsize == STATEMENT_CACHE_SIZE
    floor_compare_and_set.cache_clear()
    assert floor_compare_and_set(("state",)) is floor_compare_and_set(("state",))


async def test_shapes_read_and_write_what_they_name(storage: SqlStorage) -> None:
    world = World(storage)
    opened = await world.session()
    realm = opened.session.realm_id
    async with storage.unit_of_work() as uow:
        for n in range(5):
            await uow.assets.put(realm_id=realm, kind="card", name=f"c{n}", data={"n": n})
        await uow.variables.change("chat", opened.session.id, {"a": 1})
        await uow.variables.change("global", realm, {"b": 2})
    async with storage.read() as uow:
        for count in range(1, 6):
            wanted = [("card", f"c{n}") for n in range(count)] + [("card", "c0")]
            found = await uow.assets.get_many(realm, wanted)  # type: ignore[arg-type]
            assert sorted(a.name for a in found) == [f"c{n}" for n in range(count)]
        assert (await uow.assets.get(realm, "card", "c3")) is not None
        assert (await uow.assets.get(realm, "card", "nope")) is None
        values = await uow.variables.values_of(
            [("chat", opened.session.id), ("global", realm), ("branch", opened.main.id)]
        )
    assert values == {
        ("chat", opened.session.id): {"a": 1},
        ("global", realm): {"b": 2},
        ("branch", opened.main.id): {},
    }
