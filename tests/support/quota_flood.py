"""A producer flood for client quota tests and benchmarks: a confluent-kafka Producer
sending as fast as librdkafka takes records, counting the bytes acknowledged per moment
and the throttle times librdkafka's statistics report (`brokers.*.throttle.max`)."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.support.clients import producer

VALUE = b"q" * 10_000
"""Each record's value (10 kB)."""


class Flood:
    """One flooding producer on `client_id` (see the module docstring)."""

    def __init__(self, bootstrap: str, topic: str, client_id: str) -> None:
        self.topic = topic
        self.acked: list[tuple[float, int]] = []
        self.throttle_max_ms = 0
        self.producer = producer(
            bootstrap,
            client_id=client_id,
            linger_ms=5,
            batch_size=200_000,
            statistics_interval_ms=500,
            stats_cb=self._stats,
            queue_buffering_max_kbytes=8_192,
        )

    def _stats(self, text: str) -> None:
        for broker in json.loads(text).get("brokers", {}).values():
            self.throttle_max_ms = max(self.throttle_max_ms, int(broker["throttle"]["max"]))

    def _delivered(self, error: Any, message: Any) -> None:
        if error is None:
            self.acked.append((time.monotonic(), len(message.value())))

    def run(self, duration_s: float, *, bytes_max: int | None = None) -> None:
        sent = 0
        deadline = time.monotonic() + duration_s
        while time.monotonic() < deadline and (bytes_max is None or sent < bytes_max):
            try:
                self.producer.produce(self.topic, VALUE, on_delivery=self._delivered)
                sent += len(VALUE)
            except BufferError:
                self.producer.poll(0.05)
            self.producer.poll(0)
        self.producer.flush(60)

    def bytes_between(self, start: float, end: float) -> int:
        return sum(size for at, size in self.acked if start <= at < end)
