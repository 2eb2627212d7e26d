"""The browser harness itself: without Chromium the browser tests fail in CI (``CI`` set) and
skip elsewhere, naming what to install; the driver path is always the system one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_web import browser


def test_a_missing_browser_fails_in_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", tmp_path / "no-chromium")
    reason = browser.browser_missing()
    assert reason is not None and "apt-get install chromium chromium-driver" in reason
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="browser tests cannot run in CI"):
        browser.require_browser()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no-chromium is missing"):
        browser.require_browser()


def test_the_driver_is_debians_and_every_wait_is_bounded() -> None:
    assert Path("/usr/bin/chromedriver") == browser.CHROMEDRIVER
    assert Path("/usr/bin/chromium") == browser.CHROMIUM
    assert 0 < browser.WAIT_S <= browser.PAGE_LOAD_S <= 60
    assert browser.WINDOW[1] < browser.MAX_SHOT_HEIGHT
