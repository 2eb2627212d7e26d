"""Storage fixtures shared with the storage tests."""

from tests.test_storage.conftest import storage

__all__ = ["storage"]
