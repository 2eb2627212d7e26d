"""The web page in a real headless Chromium (issue 20's must-show): log in with the token, open
a session played through the console, see its branch tree with a fork and a page written again,
the variables of page 1 and page 2, a memory record and its lineage, the prompt inspector with
the world-info entry that fired and the key that fired it; then a reply made meanwhile appears
without a reload. A screenshot of each page is written (tests/test_web/screenshots/)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_web.browser import PHONE_WINDOW, WINDOW, Shots, wait_for
from tests.test_web.played import PlayedServer

pytestmark = pytest.mark.timeout(240)


def _css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, selector))


def _one(driver: Any, selector: str) -> Any:
    found = _css(driver, selector)
    assert found, f"nothing matches {selector!r} on {driver.current_url}"
    return found[0]


def _open(driver: Any, played: PlayedServer, path: str) -> None:
    driver.get(played.url + path)
    wait_for(driver, lambda d: d.execute_script("return document.readyState") == "complete", path)


def _log_in(driver: Any, played: PlayedServer, shots: Shots) -> None:
    _open(driver, played, "/login")
    shots(driver, "login")
    _one(driver, "input[name=token]").send_keys(played.token)
    _one(driver, "form[action='/login'] button[type=submit]").click()
    wait_for(driver, lambda d: not d.current_url.endswith("/login"), "the login to go through")


def test_the_pages_of_a_played_session_in_chromium(
    browser: Any, shots: Shots, played: PlayedServer
) -> None:
    sid = played.session_id
    _log_in(browser, played, shots)

    # The sessions list names the console session.
    _open(browser, played, "/")
    assert "harbor" in _one(browser, "main").text
    shots(browser, "sessions")

    # The branch tree: main and the fork after floor 2; the last floor has two pages.
    _open(browser, played, f"/sessions/{sid}/timeline?branch=main&floor=8")
    branches = {li.get_attribute("data-branch"): li.text for li in _css(browser, "[data-branch]")}
    assert "main" in branches and "main-2" in branches, branches
    assert "after floor 2" in branches["main-2"]
    pages = _css(browser, ".floor-detail details[data-page]")
    assert [p.get_attribute("data-page") for p in pages] == ["1", "2"]
    shots(browser, "timeline")

    # The variables of page 1 and of page 2 of that floor: each page's own value.
    seen = {}
    for page in (1, 2):
        _open(browser, played, f"/sessions/{sid}/variables?branch=main&floor=8&page={page}")
        cell = _one(browser, "[data-scope=page] tr[data-var=mood] .value")
        seen[page] = cell.text
        shots(browser, f"variables-page-{page}")
    assert seen == {1: '"calm"', 2: '"stormy"'}

    # A memory record and its lineage: the macro summary and the micros it compacts.
    _open(browser, played, f"/sessions/{sid}/memory")
    macro = [row for row in _css(browser, "tr.record") if "macro" in row.text]
    assert len(macro) == 1, [row.text for row in _css(browser, "tr.record")]
    compacts = _css(macro[0], "li[data-relation=compacts][data-direction=out]")
    assert len(compacts) >= 3
    assert all("Scene" in link.text for link in compacts)
    compacted = {row.get_attribute("data-memory") for row in _css(browser, "tr.record.compacted")}
    assert compacted == {link.find_element("css selector", "code").text for link in compacts}
    shots(browser, "memory")

    # The prompt inspector: the world-info entry that fired, and the key that fired it.
    _open(browser, played, f"/sessions/{sid}/prompt")
    entry = _one(browser, "li[data-world='harbor.0']")
    assert _one(entry, ".fired").get_attribute("data-fired-by") == "lighthouse"
    assert "red lamp" in _one(browser, "#messages").text
    assert "Macro Summary" in _one(browser, "#memory-block").text
    copy = _one(browser, "button[data-copy]")
    assert copy.is_displayed()  # the small script ran and offers the copy
    shots(browser, "prompt")

    # The assets page lists the card and the world book in use.
    _open(browser, played, f"/sessions/{sid}/assets")
    assets = {row.get_attribute("data-asset") for row in _css(browser, "tr[data-asset]")}
    assert {"card:Mira", "worldbook:harbor"} <= assets
    shots(browser, "assets")

    # Live: with the timeline open, a reply made through the console appears, no reload.
    _open(browser, played, f"/sessions/{sid}/timeline?branch=main")
    wait_for(
        browser,
        lambda d: d.execute_script("return document.documentElement.dataset.live") == "on",
        "the live stream to connect",
    )
    browser.execute_script("window.__sameDocument = 'yes'")
    assert not _css(browser, "li.floor[data-floor='9']")
    played.console("One more night at the lighthouse.")
    wait_for(browser, lambda d: _css(d, "li.floor[data-floor='9']"), "floor 9 to appear")
    assert browser.execute_script("return window.__sameDocument") == "yes"  # not reloaded
    assert "One more night" in _one(browser, "li.floor[data-floor='9']").text
    shots(browser, "timeline-live")

    # The timeline links each floor to its prompt as it was assembled.
    _open(browser, played, f"/sessions/{sid}/timeline?branch=main")
    _one(browser, "a[data-prompt-floor='3']").click()
    wait_for(browser, lambda d: "floor=3" in d.current_url, "floor 3's prompt to open")
    assert _one(browser, "[data-assembled]").get_attribute("data-source") == "stored"
    assert "lighthouse" in _one(browser, "li[data-world='harbor.0'] .fired").text

    # The dark theme, as the system's choice (DevTools' media emulation).
    browser.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
    )
    _open(browser, played, f"/sessions/{sid}/timeline?branch=main&floor=8")
    assert _dark(_background(browser, "body")), _background(browser, "body")
    assert _dark(_background(browser, ".card")), _background(browser, ".card")
    shots(browser, "timeline-dark")
    _open(browser, played, f"/sessions/{sid}/prompt")
    shots(browser, "prompt-dark")
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})

    # Phone-sized: the timeline, the variables and the memory page fit the width.
    browser.set_window_size(*PHONE_WINDOW)
    for name, path in (
        ("timeline-phone", f"/sessions/{sid}/timeline?branch=main&floor=8"),
        ("variables-phone", f"/sessions/{sid}/variables?branch=main&floor=8&page=2"),
        ("memory-phone", f"/sessions/{sid}/memory"),
    ):
        _open(browser, played, path)
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        shots(browser, name)
        assert overflow <= 1, f"{name} is {overflow}px wider than the phone"
    browser.set_window_size(*WINDOW)
    assert len(shots.written) == 14
    assert all(path.stat().st_size > 0 for path in shots.written)


def _background(driver: Any, selector: str) -> str:
    return str(
        driver.execute_script(
            "return getComputedStyle(document.querySelector(arguments[0])).backgroundColor",
            selector,
        )
    )


def _dark(color: str) -> bool:
    """Whether a computed ``rgb(...)`` colour is dark (mean channel under a third)."""
    channels = [int(c) for c in color[color.index("(") + 1 : color.index(")")].split(",")[:3]]
    return sum(channels) / 3 < 85
