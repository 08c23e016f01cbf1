"""A request the client has yet to build: the API, the versions its builder knows, and
the builder itself. The client picks the version (the highest that the builder, kio
and the broker's ApiVersions all allow) and only then builds the kio object, so no
caller hard-codes a version.
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

    def __post_init__(self) -> None:
        assert 0 <= self.min_version <= self.max_version, self
