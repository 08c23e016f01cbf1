"""Fixtures for the ecosystem tests: software built for Kafka (Kafka's own tools and
Java clients, Spark's Kafka connector, Kafka Streams, Kafka Connect, MirrorMaker 2,
Quix Streams) run unchanged against a real `shoal serve` process.

The broker fixtures and the broker-log attachment on failure are the end-to-end
tests' own (tests/e2e/conftest.py), shared rather than repeated. `java_tools` is one
JVM per module running Kafka's tools (and compiled test programs) one after another
(tests/support/kafka_reference.JavaSession); without java and mvn the module skips,
except in CI (CI=true), where that is a failure. `on_kafka()` points a module at the
reference broker instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import brokers, pytest_runtest_makereport
from tests.support import kafka_reference

__all__ = [
    "brokers",
    "java_session_factory",
    "on_kafka",
    "pytest_runtest_makereport",
    "settled_start_offset",
]


def on_kafka() -> bool:
    """SHOAL_ECOSYSTEM_ON_KAFKA=1 runs the modules that support it against the reference
    broker (Kafka 4.2.2) instead of Shoal: a check, when writing or changing a test,
    that what it expects is Kafka's behaviour."""
    return bool(os.environ.get("SHOAL_ECOSYSTEM_ON_KAFKA"))


def settled_start_offset(reported: int | str, settled: int) -> bool:
    """Whether a share-partition's reported start offset is right once every record
    before `settled` is acknowledged. Shoal reports `settled` at once; Kafka moves it
    only at the share-partition's next state write (docs/design/differential.md, share
    groups' worked example), so on the reference any offset up to it passes."""
    if on_kafka():
        return 0 <= int(reported) <= settled
    return int(reported) == settled


@pytest.fixture(scope="module")
def java_session_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., kafka_reference.JavaSession]]:
    """Opens JavaSessions (with the given Java programs on the classpath) that close
    when the module ends; skips when there is no Java toolchain."""
    try:
        kafka_reference.install()
    except kafka_reference.ReferenceUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Kafka tools: {exc}")
    opened: list[kafka_reference.JavaSession] = []
    folder = tmp_path_factory.mktemp("jvm")

    def open_session(*programs: Path) -> kafka_reference.JavaSession:
        session = kafka_reference.JavaSession(folder / f"jvm{len(opened)}.log", *programs)
        opened.append(session)
        return session

    try:
        yield open_session
    finally:
        for session in opened:
            session.close()
