"""Type-checked (never run) proof that the SQL storage implements the engine's storage port;
``test_port_conformance`` runs mypy on it."""

from __future__ import annotations

from adapters.storage import SqlStorage, create_engine
from adapters.storage.uow import SqlUnitOfWork
from engine.ports import Storage, UnitOfWork


def storage_is_a_port() -> Storage:
    return SqlStorage(create_engine("sqlite+aiosqlite://"))


def unit_of_work_is_a_port(uow: SqlUnitOfWork) -> UnitOfWork:
    return uow
