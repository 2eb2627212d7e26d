"""Each activated entry says what fired it: the primary key that matched (with the secondary
keys that matched too), or constant, forced or the ``@@activate`` decorator."""

from __future__ import annotations

from engine.formats.worldbook import LOGIC_AND_ANY
from engine.prompt.wi_output import (
    FIRED_CONSTANT,
    FIRED_DECORATOR,
    FIRED_FORCED,
    WorldInfoResult,
)
from tests.test_worldinfo.helpers import book, entry, scan


def _fired(result: WorldInfoResult) -> dict[int, str]:
    return {e.uid: e.fired_by for e in result.activated}


def test_the_first_primary_key_that_matched_is_recorded() -> None:
    b = book(entry(1, "dragon", "castle"), entry(2, "zzz", "Tower"))
    assert _fired(scan(b, ["the castle and the tower"])) == {1: "castle", 2: "Tower"}


def test_secondary_keys_that_matched_are_recorded_with_the_primary() -> None:
    e = entry(1, "key", secondary_keys=("a1", "b2"), selective=True, selective_logic=LOGIC_AND_ANY)
    assert _fired(scan(book(e), ["key and b2"])) == {1: "key + b2"}


def test_keyless_activations_name_how_they_were_activated() -> None:
    b = book(
        entry(1, constant=True),
        entry(2, "zzz"),
        entry(3, "yyy", content="@@activate\nalways"),
    )
    fired = _fired(scan(b, ["nothing here"], forced={"B.2"}))
    assert fired == {1: FIRED_CONSTANT, 2: FIRED_FORCED, 3: FIRED_DECORATOR}


def test_the_dry_run_summary_carries_it() -> None:
    (activated,) = scan(book(entry(1, "dragon")), ["a dragon"]).activated
    assert activated.to_json()["fired_by"] == "dragon"
