"""Spark fixtures: ONE `local[2]` SparkSession and ONE broker process for the whole run.

A Spark session costs seconds to start and its first query about ten more, so every
Spark test shares `spark` (session scope) and `spark_broker`; tests keep apart by
using their own topic names. Per docs/design/spark-connector.md §5: the UI is off, shuffles use two
partitions, workers run this interpreter (PYSPARK_PYTHON; otherwise a system python3
without pyarrow) and Spark binds to 127.0.0.1. Without pyspark or java the fixtures
skip, so the rest of the suite runs on a machine without the `spark` extra.

The session also carries Spark's own Kafka connector (`spark.jars`, resolved by
tests/spark/kafka_connector.py) when Maven can provide it: jars cannot be added to a
running driver, and one session serves every module. Without it the session starts
anyway and only tests/spark/test_kafka_connector.py stops, saying why
(`kafka_connector_jars`).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.spark.jvm import QUICK_JVM_OPTIONS
from tests.spark.kafka_connector import connector_jars
from tests.support.broker import BrokerProcess, running
from tests.support.kafka_reference import ReferenceUnavailable


def spark_missing() -> str | None:
    """Why Spark tests cannot run here, or None."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        return f"{exc.name or exc} is not installed (pip install -e '.[spark]')"
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and Path(java_home, "bin", "java").exists()):
        return "java is not installed (Spark needs Java 17 or 21)"
    return None


@pytest.fixture(scope="session")
def kafka_connector_jars() -> list[Path] | Exception:
    """Spark's Kafka connector's jars, or why there are none (no java/mvn/Maven Central:
    ReferenceUnavailable; another PySpark than the pom's: ConnectorVersionMismatch)."""
    reason = spark_missing()
    if reason is not None:
        return RuntimeError(reason)
    try:
        return connector_jars()
    except (ReferenceUnavailable, AssertionError) as exc:
        return exc


@pytest.fixture(scope="session")
def spark(
    tmp_path_factory: pytest.TempPathFactory, kafka_connector_jars: list[Path] | Exception
) -> Iterator[Any]:
    reason = spark_missing()
    if reason is not None:
        pytest.skip(reason)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    from shoal.spark import register

    scratch = tmp_path_factory.mktemp("spark")
    builder = SparkSession.builder
    if not isinstance(kafka_connector_jars, Exception):
        builder = builder.config("spark.jars", ",".join(map(str, kafka_connector_jars)))
    session = (
        builder.master("local[2]")
        .appName("shoal-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.local.dir", str(scratch / "local"))
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .config(
            "spark.driver.extraJavaOptions",
            f"-Dderby.system.home={scratch / 'derby'} {QUICK_JVM_OPTIONS}",
        )
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def spark_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for every Spark test (each test uses topics of its own). Retention is
    off: the tests' hand-built batches carry 2023 timestamps, and this broker outlives
    `log.retention.check.interval.ms` (5 min) in a full run, when retention.ms (7 days)
    would rightly delete them under a running test's feet."""
    yield from running(tmp_path_factory.mktemp("spark-broker") / "data", "log.retention.ms=-1")
