"""End-to-end fixtures: brokers with custom settings, and their logs on failure.

A failing end-to-end test gets the tail of every broker log it used attached to its
report (section "broker log"), so a broker-side traceback is next to the assertion.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.broker import BrokerProcess, Brokers

_LOG_TAIL_LINES = 120


@pytest.fixture
def brokers(tmp_path: Path) -> Iterator[Brokers]:
    factory = Brokers(tmp_path)
    try:
        yield factory
    finally:
        factory.kill_all()


def _brokers_of(item: pytest.Item) -> list[BrokerProcess]:
    found: list[BrokerProcess] = []
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, BrokerProcess):
            found.append(value)
        elif isinstance(value, Brokers):
            found.extend(value.started)
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not report.failed:
        return
    for process in _brokers_of(item):
        tail = "".join(process.log_text().splitlines(keepends=True)[-_LOG_TAIL_LINES:])
        state = "alive" if process.alive else "not running"
        report.sections.append((f"broker log ({process.bootstrap}, {state})", tail))
