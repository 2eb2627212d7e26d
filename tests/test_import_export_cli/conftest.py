"""The ``cli`` fixture: tavernbot against a temporary SQLite database."""

from tests.test_import_export_cli.support import cli

__all__ = ["cli"]
