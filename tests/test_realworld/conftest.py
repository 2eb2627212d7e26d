"""Fixtures: a service on a SQLite file database with the offline model (``service``)."""

from tests.test_turns.conftest import events, service, storage

__all__ = ["events", "service", "storage"]
