"""The share source driver's bounds (share_driver.py), with a member that hands out one
record per ShareFetch (the real member is exercised against a broker in
tests/spark/test_share_member.py)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from shoal.spark.share_driver import ACQUIRE_ROUNDS_MAX, ShareDriver
from shoal.spark.share_member import ACCEPT, MemberSettings
from shoal.spark.share_offsets import INITIAL_OFFSET, Span, Spans, TopicPartition

TP = TopicPartition("t", 0)


class OneRecordAtATime:
    """Each acquire hands out the next offset; acknowledgements are recorded."""

    def __init__(self) -> None:
        self.settings = MemberSettings("localhost:9092", "g", ("t",))
        self.lock_duration_ms = 30_000
        self.next_offset = 0
        self.fetches = 0
        self.acks: list[tuple[int, Spans]] = []

    def acquire(
        self, *, records_max: int, wait_ms: int, skip: Collection[TopicPartition] = ()
    ) -> dict[TopicPartition, list[Span]]:
        self.fetches += 1
        offset, self.next_offset = self.next_offset, self.next_offset + 1
        return {TP: [Span(offset, offset, 1)]}

    def acknowledge(self, spans: Spans, ack_type: int) -> dict[TopicPartition, str]:
        self.acks.append((ack_type, spans))
        return {}

    def take_lost(self) -> dict[TopicPartition, Any]:
        return {}


def test_one_latest_offset_makes_at_most_the_round_limit_of_fetches() -> None:
    member = OneRecordAtATime()
    driver = ShareDriver(member, acquire_wait_ms=0)  # type: ignore[arg-type]
    end = driver.latest_offset(INITIAL_OFFSET, records_max=1000)
    assert member.fetches == ACQUIRE_ROUNDS_MAX
    assert end is not None
    assert end.spans == {TP: (Span(0, ACQUIRE_ROUNDS_MAX - 1, 1),)}
    # the next trigger accepts that batch and plans the following records
    member.fetches = 0
    again = driver.latest_offset(end, records_max=5)
    assert member.acks == [(ACCEPT, {TP: (Span(0, ACQUIRE_ROUNDS_MAX - 1, 1),)})]
    assert again is not None and again.record_count == 5
    assert member.fetches == 5
