"""Reading a whole topic as it is now, transactional or not, for the ecosystem tests.

A reader stops at each partition's end as ListOffsets gives it for its isolation level;
its position counts transaction markers, which it never sees, so it is the position and
not the last record's offset that says the end is reached.
"""

from __future__ import annotations

import time

from confluent_kafka import TopicPartition

from tests.support.clients import consumer


def end_offsets(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[int]:
    """Each partition's end for a reader at `isolation`: the high watermark for
    read_uncommitted, the last stable offset for read_committed (ListOffsets)."""
    c = consumer(bootstrap, isolation_level=isolation)
    try:
        return [
            c.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)[1]
            for p in range(partitions)
        ]
    finally:
        c.close()


def read_all(
    bootstrap: str, topic: str, partitions: int, isolation: str
) -> list[list[tuple[str | None, str]]]:
    """Every record (key, value) of each partition up to its end offset now, as a reader
    at `isolation` sees them."""
    ends = end_offsets(bootstrap, topic, partitions, isolation)
    out: list[list[tuple[str | None, str]]] = [[] for _ in range(partitions)]
    c = consumer(bootstrap, isolation_level=isolation)
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 120
        while True:
            # The position passes control records (transaction markers) too.
            positions = [
                tp.offset
                for tp in c.position([TopicPartition(topic, p) for p in range(partitions)])
            ]
            if all(positions[p] >= ends[p] for p in range(partitions)):
                return out
            assert time.monotonic() < deadline, (
                f"read of {topic} stalled at {positions}, want {ends}"
            )
            for message in c.consume(num_messages=10_000, timeout=0.2):
                assert message.error() is None, message.error()
                if message.offset() < ends[message.partition()]:
                    key = message.key()
                    out[message.partition()].append(
                        (None if key is None else key.decode(), message.value().decode())
                    )
    finally:
        c.close()
