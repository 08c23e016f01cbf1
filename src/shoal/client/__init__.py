"""A small async Kafka client on Shoal's protocol layer, for the CLI, admin and tests."""

from shoal.client.connection import KafkaConnection, ResponseError

__all__ = ["KafkaConnection", "ResponseError"]
