"""Shared fixtures: a real broker process per test module, or per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker import BrokerProcess, running


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the whole test module (tests use distinct topic names)."""
    yield from running(tmp_path_factory.mktemp("broker") / "data")


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of the test's own, for tests that restart or crash it."""
    yield from running(tmp_path / "data")
