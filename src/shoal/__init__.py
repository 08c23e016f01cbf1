"""Shoal: a Kafka-protocol message broker with KIP-932 share groups."""

__version__ = "0.1.0"
"""Shoal's version: the one source (pyproject.toml reads it as the package's)."""
KAFKA_VERSION = "4.2"
"""The Apache Kafka release whose protocol, behaviour and tools Shoal follows."""
