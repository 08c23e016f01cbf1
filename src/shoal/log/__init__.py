"""Partition logs: segments of Kafka v2 record batches stored verbatim."""
