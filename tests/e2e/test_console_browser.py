"""The web console in a real headless Chromium (Debian's chromium + chromedriver,
driven by Selenium): a share group's in-flight records change state on the page, with
no reload, as a confluent-kafka ShareConsumer acquires, releases and accepts them.

A real `shoal` broker process serves the console on its HTTP listener
(`metrics.listener`). Screenshots of the page go to the test's tmp dir, and with
SHOAL_CONSOLE_SCREENSHOTS=docs/assets also there (console-acquired.png,
console-released.png, console-phone.png; overwritten by each run). Skipped, saying
why, where chromium or chromedriver is missing (scripts/setup installs them as root).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer

from tests.support.broker import running
from tests.support.clients import create_topic
from tests.support.metrics import METRICS_OVERRIDE, metrics_url
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    first_batch,
    produce_values,
    share_consumer,
    share_group,
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOTS_ENV = "SHOAL_CONSOLE_SCREENSHOTS"
"""A directory to copy the screenshots to (e.g. bench/results), so a test run leaves the
repository as it found it unless asked."""
WAIT_S = 60.0
RECORDS = 6

pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="the console browser test needs Debian's chromium and chromium-driver "
    "(/usr/bin/chromium, /usr/bin/chromedriver): run scripts/setup as root, or "
    "apt-get install chromium chromium-driver",
)

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")


@dataclass(frozen=True)
class ConsoleBroker:
    bootstrap: str
    http_url: str


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ConsoleBroker]:
    for process in running(tmp_path / "data", *SHARE_TEST_BROKER_OVERRIDES, METRICS_OVERRIDE):
        yield ConsoleBroker(process.bootstrap, metrics_url(process))


@pytest.fixture
def browser() -> Iterator[object]:
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1000,1300",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _cells(driver: object) -> list[tuple[int, int, str, int]]:
    """The strip's cells: (first offset, last offset, state, delivery count)."""
    from selenium.webdriver.common.by import By

    found = []
    for cell in driver.find_elements(By.CSS_SELECTOR, ".strip .cell"):  # type: ignore[attr-defined]
        found.append(
            (
                int(cell.get_attribute("data-first")),
                int(cell.get_attribute("data-last")),
                str(cell.get_attribute("data-state")),
                int(cell.get_attribute("data-dc")),
            )
        )
    return found


def _offsets(cells: list[tuple[int, int, str, int]], state: str, dc: int | None = None) -> set[int]:
    return {
        offset
        for first, last, s, count in cells
        if s == state and (dc is None or count == dc)
        for offset in range(first, last + 1)
    }


def _wait_for(driver: object, what: str, check: object) -> list[tuple[int, int, str, int]]:
    from selenium.common.exceptions import StaleElementReferenceException

    deadline = time.monotonic() + WAIT_S
    cells: list[tuple[int, int, str, int]] = []
    while time.monotonic() < deadline:
        try:
            cells = _cells(driver)
        except StaleElementReferenceException:  # the page re-rendered while read: again
            time.sleep(0.1)
            continue
        if callable(check) and check(cells):
            return cells
        time.sleep(0.2)
    raise AssertionError(f"the page never showed {what}; last cells {cells}")


def _wait_for_text(driver: object, selector: str) -> list[str]:
    """The texts of the elements `selector` finds, once there are some (the records
    table stays open across re-renders)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            texts = [e.text for e in driver.find_elements(By.CSS_SELECTOR, selector)]  # type: ignore[attr-defined]
        except StaleElementReferenceException:
            continue
        if texts and all(texts):
            return texts
        time.sleep(0.2)
    raise AssertionError(f"the page never showed {selector}")


def _other_pages(driver: Any, broker: ConsoleBroker, topic: str, tmp_path: Path) -> None:
    """The topics page lists the topic with its log end; the charts page draws its
    four charts; at a phone's width the group page does not overflow sideways."""
    from selenium.webdriver.common.by import By

    driver.get(f"{broker.http_url}/console/#/topics")
    _wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, f'tr[data-topic="{topic}"]'))
    row = driver.find_element(By.CSS_SELECTOR, f'tr[data-topic="{topic}"]')
    assert str(RECORDS) in row.text, row.text
    driver.get(f"{broker.http_url}/console/#/charts")
    _wait_until(lambda: len(driver.find_elements(By.CSS_SELECTOR, "svg.chart")) == 4)
    driver.set_window_size(390, 844)
    driver.get(f"{broker.http_url}/console/#/share-groups")
    _wait_until(lambda: driver.find_elements(By.CSS_SELECTOR, "main table"))
    overflow = driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"the page is {overflow} px wider than a phone's screen"
    _screenshot(driver, tmp_path, "console-phone")


def _wait_until(check: Callable[[], object]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, "the page never showed what was expected"
        time.sleep(0.2)


def _screenshot(driver: object, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    driver.save_screenshot(str(path))  # type: ignore[attr-defined]
    if target := os.environ.get(SCREENSHOTS_ENV):
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / f"{name}.png")  # the latest run's, overwritten
    return path


def test_console_shows_in_flight_records_change_state(
    broker: ConsoleBroker, browser: object, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    topic, group = "console-queue", "console-group"
    create_topic(broker.bootstrap, topic)
    share_group(broker.bootstrap, group, lock_ms=60_000)
    produce_values(broker.bootstrap, topic, [f"r{i}".encode() for i in range(RECORDS)])

    browser.get(f"{broker.http_url}/console/#/share-groups/{group}")  # type: ignore[attr-defined]
    consumer: ShareConsumer = share_consumer(
        broker.bootstrap, group, [topic], explicit=True, max_poll_records=RECORDS
    )
    try:
        batch = first_batch(consumer)
        held = {int(m.offset() or 0) for m in batch}
        cells = _wait_for(
            browser, "the acquired records", lambda c: _offsets(c, "acquired", 1) == held
        )
        assert _offsets(cells, "available") == set(range(len(batch), RECORDS))
        holder = browser.find_element(By.CSS_SELECTOR, ".strip .cell")  # type: ignore[attr-defined]
        assert holder.get_attribute("data-holder"), "an acquired record shows its holder"
        browser.find_element(By.CSS_SELECTOR, ".sp details summary").click()  # type: ignore[attr-defined]
        locks = _wait_for_text(browser, "td.lock")
        assert all(text.endswith(" s") for text in locks), f"lock expiries shown: {locks}"
        _screenshot(browser, tmp_path, "console-acquired")

        released = {m for m in held if m < 2}
        for message in batch:
            offset = int(message.offset() or 0)
            kind = AcknowledgeType.RELEASE if offset in released else AcknowledgeType.ACCEPT
            consumer.acknowledge(message, kind)
        assert all(error is None for error in consumer.commit_sync(30).values())
        cells = _wait_for(
            browser,
            "released records available and the rest acknowledged",
            lambda c: (
                _offsets(c, "available", 1) == released
                and _offsets(c, "acknowledged") == held - released
            ),
        )
        assert _offsets(cells, "acquired") == set()
        _screenshot(browser, tmp_path, "console-released")

        again = first_batch(consumer)
        assert {int(m.offset() or 0) for m in again} == released
        assert {m.delivery_count() for m in again} == {2}
        _wait_for(browser, "the second delivery", lambda c: _offsets(c, "acquired", 2) == released)
        for message in again:
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        assert all(error is None for error in consumer.commit_sync(30).values())
        _wait_for(browser, "an empty window", lambda c: c == [])
        spso = browser.find_element(By.CSS_SELECTOR, ".sp .spso")  # type: ignore[attr-defined]
        assert spso.text == str(RECORDS), "the SPSO moved past every accepted record"
        _other_pages(browser, broker, topic, tmp_path)
    finally:
        consumer.close()
