"""Shoal: a Kafka-protocol message broker with KIP-932 share groups."""

__version__ = "0.1.0"
