"""Fixtures of the web page's tests: a real headless Chromium and a screenshot writer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.test_web.browser import (
    Shots,
    require_browser,
    screenshots_for,
    start_chromium,
)
from tests.test_web.played import PlayedServer


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless Chromium (fails in CI, skips elsewhere, when none is installed)."""
    require_browser()
    driver = start_chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def shots(request: pytest.FixtureRequest) -> Shots:
    """``shots(driver, "page name")`` writes a PNG of what the browser shows."""
    return screenshots_for(request)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlayedServer]:
    """A console-played session served by the web page from its own thread (one per module:
    playing the story takes a few seconds); stopped in teardown."""
    server = PlayedServer(directory=tmp_path_factory.mktemp("played")).start()
    try:
        yield server
    finally:
        server.stop()
