"""The broker raises its soft open-file limit to cover `max.connections`
(a broker at its connection limit must not run out of file descriptors first)."""

from __future__ import annotations

import logging
import resource
from collections.abc import Iterator

import pytest

from shoal import limits
from shoal.server.broker import ensure_fd_limit


@pytest.fixture
def rlimit() -> Iterator[tuple[int, int]]:
    saved = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield saved
    resource.setrlimit(resource.RLIMIT_NOFILE, saved)


def test_the_soft_limit_is_raised_to_cover_max_connections(rlimit: tuple[int, int]) -> None:
    soft, hard = rlimit
    max_connections = 200
    wanted = max_connections + limits.FD_HEADROOM
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"hard limit {hard} below {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
    ensure_fd_limit(max_connections)
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= wanted


def test_a_hard_limit_below_max_connections_is_a_warning(
    rlimit: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    _soft, hard = rlimit
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit")
    with caplog.at_level(logging.WARNING, logger="shoal.server.broker"):
        ensure_fd_limit(hard)  # hard + headroom can never be had
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == hard
    assert "below max.connections" in caplog.text
