"""Differential fixtures: Apache Kafka 4.2 and Shoal side by side (docs/design/differential.md).

A differential test runs one scenario, with real clients, against both brokers and
compares what a user can observe. `kafka` and `shoal` are one broker each per test
module (tests use distinct names: `unique()`); `pair` holds both. The reference is
installed from Maven Central on first use (tests/support/kafka_reference.py). Without
java and mvn the module skips, except in CI (CI=true), where that is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from tests.support import kafka_reference
from tests.support.broker import BrokerProcess, running
from tests.support.topics import topic_name

T = TypeVar("T")


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kafka_reference.KafkaBroker]:
    try:
        kafka_reference.install()
    except kafka_reference.ReferenceUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Kafka reference broker: {exc}")
    with kafka_reference.running(tmp_path_factory.mktemp("kafka") / "data") as broker:
        yield broker


@pytest.fixture(scope="module")
def shoal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("shoal") / "data")


@dataclass
class Pair:
    """Kafka and Shoal; `run` calls one scenario on each bootstrap address."""

    kafka: kafka_reference.KafkaBroker
    shoal: BrokerProcess

    def run(self, scenario: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, T]:
        """(Kafka's observation, Shoal's observation) of `scenario(bootstrap, ...)`."""
        return (
            scenario(self.kafka.bootstrap, *args, **kwargs),
            scenario(self.shoal.bootstrap, *args, **kwargs),
        )


@pytest.fixture(scope="module")
def pair(kafka: kafka_reference.KafkaBroker, shoal: BrokerProcess) -> Pair:
    return Pair(kafka, shoal)


def unique(prefix: str) -> str:
    """A name no other test of the module uses (topics, groups, transactional ids)."""
    return topic_name(prefix)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not report.failed:
        return
    for value in getattr(item, "funcargs", {}).values():
        brokers = [value.kafka, value.shoal] if isinstance(value, Pair) else [value]
        for broker in brokers:
            if isinstance(broker, kafka_reference.KafkaBroker | BrokerProcess):
                tail = "".join(broker.log_text().splitlines(keepends=True)[-80:])
                report.sections.append((f"{type(broker).__name__} log", tail))
