"""Every call of the ``RoleplayService`` protocol exists, with the same parameters, on the
engine's ``TavernService`` and on the full in-memory double the front-end tests use."""

from __future__ import annotations

import inspect

import pytest

from engine.turns.api import RoleplayService
from engine.turns.service import TavernService
from tests.fakes.roleplay import FullFakeRoleplayService

CALLS = sorted(
    name
    for name, value in vars(RoleplayService).items()
    if not name.startswith("_") and inspect.iscoroutinefunction(value)
)


def _params(function: object) -> list[tuple[str, object, object]]:
    signature = inspect.signature(function)  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


def test_the_protocol_lists_the_front_end_calls() -> None:
    for name in ("set_persona", "memories", "bind_asset", "close_session", "floor_speakers"):
        assert name in CALLS


@pytest.mark.parametrize("name", CALLS)
@pytest.mark.parametrize("implementation", [TavernService, FullFakeRoleplayService])
def test_each_call_is_implemented_with_the_same_parameters(
    implementation: type, name: str
) -> None:
    found = getattr(implementation, name, None)
    assert found is not None, f"{implementation.__name__} has no {name}"
    assert _params(found) == _params(getattr(RoleplayService, name))


def test_the_facade_implements_every_member_of_the_protocol() -> None:
    # Every public member, the plain (non-async) ones too, with the same parameters and the
    # same kind (coroutine or not).
    members = [
        n for n, v in vars(RoleplayService).items() if not n.startswith("_") and callable(v)
    ]
    assert "session_option_specs" in members
    for name in members:
        wanted = getattr(RoleplayService, name)
        found = getattr(TavernService, name, None)
        assert found is not None, f"TavernService has no {name}"
        assert _params(found) == _params(wanted), name
        assert inspect.iscoroutinefunction(found) == inspect.iscoroutinefunction(wanted), name


def test_the_facade_is_composed_not_inherited() -> None:
    # The facade delegates to services it holds; it inherits no behaviour.
    assert TavernService.__mro__ == (TavernService, object)
