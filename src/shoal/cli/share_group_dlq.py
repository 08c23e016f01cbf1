"""The dead-letter queue line of `shoal share-groups --describe` (KIP-1191).

`dlq_summary` reads the group's `errors.deadletterqueue.topic.name` (DescribeConfigs
on the GROUP resource) and, when it is set and the topic exists, counts the records
on it whose `__dlq.errors.group` header names the group: the DLQ records the broker
has written for the group (the count is read from the topic itself, so it survives
restarts and reflects retention). Every partition is read from its log start to its
end with Fetch; batches are decoded with kio's batch reader (the broker writes DLQ
batches uncompressed; compressed batches, written by someone else, are skipped).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kio.records.readers import read_batch
from kio.serial.errors import SerialError

from shoal.client import Client, check, requests
from shoal.client.errors import ErrorCode
from shoal.client.metadata import TopicPartition
from shoal.client.offsets import list_offsets
from shoal.config import group_keys
from shoal.protocol.record_batch import iter_headers

DLQ_TOPIC_KEY = group_keys.ERRORS_DEADLETTERQUEUE_TOPIC_NAME.name
GROUP_HEADER = b"__dlq.errors.group"
FETCH_BYTES = 4 * 2**20
"""Bytes asked per Fetch while counting."""


@dataclass(frozen=True, slots=True)
class DlqSummary:
    topic: str
    records: int | None
    """DLQ records for the group; None when the topic does not exist."""


def dlq_summary(client: Client, group_id: str) -> DlqSummary | None:
    """The group's DLQ topic and record count, or None when it has no DLQ topic."""
    response = client.call(
        requests.describe_configs(requests.GROUP_RESOURCE, [group_id], keys=[DLQ_TOPIC_KEY])
    )
    (result,) = response.results
    check(result.error_code, result.error_message, context=f"configs of share group '{group_id}'")
    topic = next((str(c.value or "") for c in result.configs if c.name == DLQ_TOPIC_KEY), "")
    if not topic:
        return None
    view = client.metadata([topic]).topics.get(topic)
    if view is None or view.error_code != ErrorCode.none:
        return DlqSummary(topic, None)
    return DlqSummary(topic, _count(client, topic, list(view.partitions), group_id))


def _count(client: Client, topic: str, partitions: list[int], group_id: str) -> int:
    tps: list[TopicPartition] = [(topic, p) for p in partitions]
    starts = list_offsets(client, dict.fromkeys(tps, requests.EARLIEST_TIMESTAMP))
    ends = list_offsets(client, dict.fromkeys(tps, requests.LATEST_TIMESTAMP))
    wanted = group_id.encode()
    total = 0
    for tp in tps:
        offset, end = starts[tp], ends[tp]
        while offset < end:
            records = _fetch(client, tp, offset)
            progressed = False
            for header in iter_headers(records):
                if header.last_offset < offset:
                    continue
                progressed = True
                offset = header.next_offset
                if header.is_control or header.compression:
                    continue
                try:
                    batch, _ = read_batch(records, header.position)
                except (ValueError, SerialError):
                    continue
                for record in batch.records:
                    if int(record.offset) < starts[tp] or int(record.offset) >= end:
                        continue
                    if any(h.key == GROUP_HEADER and h.value == wanted for h in record.headers):
                        total += 1
            if not progressed:
                break
    return total


def _fetch(client: Client, tp: TopicPartition, offset: int) -> bytes:
    call = requests.fetch(
        {tp: requests.FetchPosition(offset, FETCH_BYTES)}, max_wait_ms=0, max_bytes=FETCH_BYTES
    )
    topic, partition = tp
    response: Any = client.to_leader(topic, partition, call, _fetch_error)
    part = response.responses[0].partitions[0]
    check(part.error_code, None, context=f"Fetch {topic}-{partition}")
    return bytes(part.records or b"")


def _fetch_error(response: Any) -> int:
    if response.error_code != ErrorCode.none:
        return int(response.error_code)
    return int(response.responses[0].partitions[0].error_code)
