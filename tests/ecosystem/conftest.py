"""Fixtures for the ecosystem tests: software built for Kafka (Kafka's own tools and
Java clients, Spark's Kafka connector, Kafka Streams, Kafka Connect, MirrorMaker 2,
Quix Streams) run unchanged against a real `shoal serve` process.

The broker fixtures and the broker-log attachment on failure are the end-to-end
tests' own (tests/e2e/conftest.py), shared rather than repeated.
"""

from __future__ import annotations

from tests.e2e.conftest import brokers, pytest_runtest_makereport

__all__ = ["brokers", "pytest_runtest_makereport"]
