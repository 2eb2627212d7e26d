"""Fixtures: the in-process command line (``cli``) and a service on SQLite (``service``)."""

from tests.test_import_export_cli.support import cli
from tests.test_turns.conftest import events, service, storage

__all__ = ["cli", "events", "service", "storage"]
