"""A real headless Chromium for the web page's tests, driven through Selenium.

Selenium, not Playwright: Playwright's Python package carries its own Node.js driver and
expects the browser build of its release (its ``install`` step downloads one); Selenium is
pure Python and speaks WebDriver to Debian's ``chromedriver``, which is built from the same
source as Debian's ``chromium``, so the two always match. The driver path is passed
explicitly, so Selenium never looks for (or downloads) a driver or a browser of its own.

Every wait is bounded (``WAIT_S``, ``PAGE_LOAD_S``); the browser is quit in teardown.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

CHROMIUM: Final = Path(os.environ.get("TAVERNBOT_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER: Final = Path(os.environ.get("TAVERNBOT_CHROMEDRIVER", "/usr/bin/chromedriver"))
PAGE_LOAD_S: Final = 30.0
"""Longest a page may take to load before the test fails."""
WAIT_S: Final = 15.0
"""Longest a test waits for something to appear on a page."""
WINDOW: Final = (1280, 900)
PHONE_WINDOW: Final = (390, 844)
MAX_SHOT_HEIGHT: Final = 6000
"""Tallest screenshot written, in CSS pixels (a longer page is cut there)."""
SCREENSHOTS: Final = Path(__file__).resolve().parent / "screenshots"
"""Where every browser test writes its screenshots (git-ignored; one PNG per page)."""


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None when Chromium and its driver exist."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (path.exists() and os.access(path, os.X_OK)):
            return f"{path} is missing: apt-get install chromium chromium-driver"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium package is missing: pip install -e '.[dev]'"
    return None


def require_browser() -> None:
    """Fail in CI (``CI`` set), skip with the reason elsewhere, when there is no browser."""
    reason = browser_missing()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"browser tests cannot run in CI: {reason}")
    pytest.skip(reason)


def start_chromium(window: tuple[int, int] = WINDOW) -> object:
    """A headless Chromium under Debian's chromedriver (the caller quits it)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",  # root in CI containers
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        f"--window-size={window[0]},{window[1]}",
    ):
        options.add_argument(flag)
    service = Service(executable_path=str(CHROMEDRIVER))
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(PAGE_LOAD_S)
    driver.set_script_timeout(WAIT_S)
    return driver


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "page"


@dataclass
class Shots:
    """Writes a screenshot per page into ``directory`` (``test-name--page.png``)."""

    directory: Path
    prefix: str
    written: list[Path]

    def __call__(self, driver: object, page: str) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{_slug(self.prefix)}--{_slug(page)}.png"
        # The whole page, not only the window (Chromium's DevTools call), up to a bound.
        metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})  # type: ignore[attr-defined]
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {
            "x": 0,
            "y": 0,
            "width": size["width"],
            "height": min(size["height"], MAX_SHOT_HEIGHT),
            "scale": 1,
        }
        shot = driver.execute_cdp_cmd(  # type: ignore[attr-defined]
            "Page.captureScreenshot", {"captureBeyondViewport": True, "clip": clip}
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        self.written.append(path)
        return path


def screenshots_for(request: pytest.FixtureRequest) -> Shots:
    """A screenshot writer for the running test; the test's screenshots of an earlier run are
    removed first (only its own: test runs may share the directory)."""
    shots = Shots(directory=SCREENSHOTS, prefix=request.node.name, written=[])
    for old in SCREENSHOTS.glob(f"{_slug(shots.prefix)}--*.png"):
        old.unlink(missing_ok=True)
    return shots


def wait_for(driver: object, condition: Callable[[object], object], what: str) -> object:
    """Wait (at most WAIT_S) until ``condition(driver)`` is truthy; fail naming ``what``."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(condition)  # type: ignore[arg-type]
    except TimeoutException:
        raise AssertionError(f"gave up after {WAIT_S}s waiting for {what}") from None
