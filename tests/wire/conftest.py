"""Fixtures the wire tests share (the module `broker` is in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.broker import BrokerProcess, running


@pytest.fixture(scope="module")
def disabled_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker with share groups turned off (`share.version=0`)."""
    yield from running(tmp_path_factory.mktemp("share-disabled") / "data", "share.version=0")
