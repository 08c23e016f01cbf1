"""A request the client has yet to build: the API, the versions its builder knows, and
the builder itself. The client picks the version (the highest that the builder, kio
and the broker's ApiVersions all allow) and only then builds the kio object, so no
caller hard-codes a version. `Call.exact(request)` wraps a ready kio object when a
caller pins a version on purpose (tests of one version's behaviour).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Call:
    api_key: int
    min_version: int
    max_version: int
    build: Callable[[int], Any]
    """version -> the kio request object of that version."""
    expect_response: bool = True
    """False for requests the broker never answers (Produce with acks=0)."""
    wait_ms: int = 0
    """How long the broker may hold the request on purpose (Fetch's max wait); added
    to the request timeout."""

    def __post_init__(self) -> None:
        assert 0 <= self.min_version <= self.max_version, self
        assert self.wait_ms >= 0, self

    @classmethod
    def exact(cls, request: Any, *, expect_response: bool = True, wait_ms: int = 0) -> Call:
        """A call that sends `request` as it is, at its own version."""
        version = int(request.__version__)
        return cls(
            int(request.__api_key__),
            version,
            version,
            lambda _version: request,
            expect_response=expect_response,
            wait_ms=wait_ms,
        )
