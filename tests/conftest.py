"""Shared fixtures: a real broker process per test module, or per test.

Compiled modules are cached even where PYTHONDONTWRITEBYTECODE is set: the suite starts
hundreds of Python processes (brokers, tools, clients), each of which would otherwise
compile Shoal's sources again, and each pytest worker its test modules (about 15 s of
CPU per worker for the collection alone). `__pycache__` is git-ignored.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker import BrokerProcess, running

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the whole test module (tests use distinct topic names)."""
    yield from running(tmp_path_factory.mktemp("broker") / "data")


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of the test's own, for tests that restart or crash it."""
    yield from running(tmp_path / "data")
