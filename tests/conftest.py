"""Fixtures shared by every test package."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
# The shared SillyTavern files and conformance vectors are read where they are, never copied.
ST_FIXTURES = SHARED / "fixtures" / "st"
CONFORMANCE = SHARED / "conformance"


@pytest.fixture
def pg_url() -> str:
    """The PostgreSQL URL for storage tests; fails (never skips) in CI when it is missing."""
    url = os.environ.get("TAVERNBOT_TEST_PG_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("TAVERNBOT_TEST_PG_URL is not set; .ci/run sets it")
        url = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
    return url
