"""Fetch v4-v18, Kafka 4.2 and Shoal side by side: one partition holding a plain batch, a
committed and an aborted transaction, fetched at every version read_uncommitted and
read_committed. The batches come back the same, header and record bytes (both brokers
stamp the same offsets and leader epoch 0); the partition's offsets and aborted
transactions agree. Producer ids are the brokers' own and are normalised to their
order of appearance (with the CRC, which covers them)."""

from __future__ import annotations

import dataclasses
import datetime
import time
import uuid
from typing import Any

from shoal.client import requests
from shoal.protocol.errors import error_name
from shoal.protocol.schema import request_schema
from tests.differential.conftest import Pair, unique
from tests.support.batches import HEADER, values_batch
from tests.support.raw_wire import answer_times
from tests.support.topics import create_led_topic, produce
from tests.support.wire import call1

TOPIC_ID_MIN_VERSION = 13
WAIT_S = 30.0
END_OFFSET = 9
"""3 records, a committed transaction of 2 and its marker, an aborted one of 2 and its marker."""
CONTROL = 0x20
"""The control (marker) bit of a batch's attributes."""


def _fetch(
    version: int, topic: str, topic_id: uuid.UUID, *, isolation: int, offset: int = 0
) -> Any:
    schema = request_schema(1, version)
    partition = schema.make(
        "FetchPartition",
        partition=0,
        current_leader_epoch=-1,
        fetch_offset=offset,
        last_fetched_epoch=-1,
        log_start_offset=-1,
        partition_max_bytes=1 << 20,
    )
    return schema.make(
        "FetchRequest",
        replica_id=-1,
        replica_state=(
            schema.make("ReplicaState", replica_id=-1, replica_epoch=-1)
            if schema.has("FetchRequest", "replica_state")
            else None
        ),
        cluster_id=None,
        max_wait=datetime.timedelta(milliseconds=10),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=isolation,
        session_id=0,
        session_epoch=-1,
        topics=(
            schema.make(
                "FetchTopic",
                topic=topic,
                topic_id=topic_id if version >= TOPIC_ID_MIN_VERSION else None,
                partitions=(partition,),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def _until_none(bootstrap: str, request: Any, code: Any) -> Any:
    """`request` answered, retried while the code `code(response)` reads is not NONE
    (Kafka's coordinators load their partitions after creating them)."""
    deadline = time.monotonic() + WAIT_S
    while (response := call1(bootstrap, request)) is not None and code(response) != 0:
        assert time.monotonic() < deadline, response
        time.sleep(0.1)
    return response


def _transaction(bootstrap: str, topic: str, *, commit: bool) -> None:
    tid = unique("fetch-txn")
    find = request_schema(10, 3).make("FindCoordinatorRequest", key=tid, key_type=1)
    _until_none(bootstrap, find, lambda r: r.error_code)
    init = request_schema(22, 4).make(
        "InitProducerIdRequest",
        transactional_id=tid,
        transaction_timeout=datetime.timedelta(seconds=60),
        producer_id=-1,
        producer_epoch=-1,
    )
    producer = _until_none(bootstrap, init, lambda r: r.error_code)
    pid, epoch = producer.producer_id, producer.producer_epoch
    add = request_schema(24, 3)
    added = add.make(
        "AddPartitionsToTxnRequest",
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=(add.make("AddPartitionsToTxnTopic", name=topic, partitions=(0,)),),
    )
    _until_none(
        bootstrap,
        added,
        lambda r: r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
    )
    schema = request_schema(0, 9)
    batch = values_batch(
        2, producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True
    )
    produced = schema.make(
        "ProduceRequest",
        transactional_id=tid,
        acks=-1,
        timeout=datetime.timedelta(seconds=10),
        topic_data=(
            schema.make(
                "TopicProduceData",
                name=topic,
                partition_data=(schema.make("PartitionProduceData", index=0, records=batch),),
            ),
        ),
    )
    assert call1(bootstrap, produced).responses[0].partition_responses[0].error_code == 0
    end = request_schema(26, 3).make(
        "EndTxnRequest",
        transactional_id=tid,
        producer_id=pid,
        producer_epoch=epoch,
        committed=commit,
    )
    assert call1(bootstrap, end).error_code == 0
    # Kafka writes the markers after it answers: the next transaction waits for them
    listed = request_schema(66, 1).make(
        "ListTransactionsRequest", state_filters=(), producer_id_filters=(), duration_filter=-1
    )
    complete = "CompleteCommit" if commit else "CompleteAbort"
    _until_none(
        bootstrap,
        listed,
        lambda r: (
            0
            if (tid, complete)
            in {(s.transactional_id, s.transaction_state) for s in r.transaction_states}
            else 1
        ),
    )


def _batches(data: bytes, producers: dict[int, int]) -> list[tuple[Any, ...]]:
    """Each batch's header fields but the CRC (producer ids normalised, markers' times
    left out), and its records' bytes."""
    batches = []
    while len(data) >= HEADER.size:
        fields = list(HEADER.unpack_from(data))
        size = 12 + fields[1]
        fields[4] = None  # the CRC covers the producer id
        if fields[9] >= 0:
            fields[9] = producers.setdefault(fields[9], len(producers))
        if fields[5] & CONTROL:
            fields[7] = fields[8] = None  # a marker's time is the broker's clock
        batches.append((*fields, data[HEADER.size : size]))
        data = data[size:]
    return batches


def _every_version(bootstrap: str) -> dict[str, Any]:
    topic = unique("fetch")
    topic_id = create_led_topic(bootstrap, topic)
    produce(bootstrap, topic, values_batch(3))
    _transaction(bootstrap, topic, commit=True)
    _transaction(bootstrap, topic, commit=False)
    producers: dict[int, int] = {}
    return {
        f"v{version} isolation={isolation}": _read_all(
            bootstrap, version, topic, topic_id, isolation=isolation, producers=producers
        )
        for version in range(4, 19)
        for isolation in (0, 1)
    }


def _read_all(
    bootstrap: str,
    version: int,
    topic: str,
    topic_id: uuid.UUID,
    *,
    isolation: int,
    producers: dict[int, int],
) -> tuple[Any, ...]:
    """Fetch from offset 0 to the end as a consumer does, each fetch from after the
    last batch the previous one returned (Kafka may return fewer batches than are
    below the high watermark): what the fetches answered, the batches, the aborted
    transactions listed."""
    offset = 0
    batches: list[tuple[Any, ...]] = []
    aborted: set[tuple[int, int]] = set()
    answered: set[tuple[Any, ...]] = set()
    deadline = time.monotonic() + WAIT_S
    while offset < END_OFFSET:
        assert time.monotonic() < deadline, (offset, batches)
        request = _fetch(version, topic, topic_id, isolation=isolation, offset=offset)
        response = call1(bootstrap, request)
        (topic_response,) = response.responses
        (partition,) = topic_response.partitions
        answered.add(
            (
                error_name(getattr(response, "error_code", 0)),
                error_name(partition.error_code),
                getattr(partition, "log_start_offset", None),
            )
        )
        if partition.last_stable_offset < END_OFFSET:  # Kafka writes markers after EndTxn
            time.sleep(0.05)
            continue
        aborted.update(
            (producers.setdefault(a.producer_id, len(producers)), a.first_offset)
            for a in partition.aborted_transactions or ()
        )
        for batch in _batches(bytes(partition.records or b""), producers):
            batches.append(batch)
            offset = batch[0] + batch[6] + 1  # base offset + last offset delta + 1
    return tuple(sorted(answered)), batches, sorted(aborted)


def test_every_fetch_version(pair: Pair) -> None:
    kafka, shoal = pair.run(_every_version)
    assert shoal.keys() == kafka.keys()
    for key in kafka:
        assert shoal[key][0] == kafka[key][0], key
        assert shoal[key][2] == kafka[key][2], key
        assert len(shoal[key][1]) == len(kafka[key][1]), key
        for theirs, ours in zip(kafka[key][1], shoal[key][1], strict=True):
            assert ours == theirs, key
    _, batches, aborted = kafka["v18 isolation=1"]
    assert [b[0] for b in batches] == [0, 3, 5, 6, 8]  # base offsets: two of them markers
    assert aborted == [(1, 6)]  # the aborted transaction's producer and first offset


def _refusals(bootstrap: str) -> dict[str, Any]:
    """An unknown topic (by name up to v12: UNKNOWN_TOPIC_OR_PARTITION; by id from v13:
    UNKNOWN_TOPIC_ID) and an offset past the end, at every version."""
    topic = unique("fetch-refused")
    topic_id = create_led_topic(bootstrap, topic)
    produce(bootstrap, topic, values_batch(2))
    seen: dict[str, Any] = {}
    for version in range(4, 19):
        for label, (name, ident, offset) in {
            "unknown topic": (unique("nope"), uuid.uuid4(), 0),
            "past the end": (topic, topic_id, 100),
        }.items():
            response = call1(bootstrap, _fetch(version, name, ident, isolation=0, offset=offset))
            (answered,) = response.responses
            seen[f"v{version} {label}"] = [
                (
                    p.partition_index,
                    error_name(p.error_code),
                    p.high_watermark,
                    p.last_stable_offset,
                    getattr(p, "log_start_offset", None),
                )
                for p in answered.partitions
            ]
    return seen


def test_refusals_at_every_version(pair: Pair) -> None:
    kafka, shoal = pair.run(_refusals)
    assert shoal == kafka
    assert kafka["v12 unknown topic"] == [(0, "UNKNOWN_TOPIC_OR_PARTITION", -1, -1, -1)]
    assert kafka["v13 unknown topic"] == [(0, "UNKNOWN_TOPIC_ID", -1, -1, -1)]
    assert kafka["v13 past the end"] == [(0, "OFFSET_OUT_OF_RANGE", -1, -1, -1)]


PIPELINE_WAIT_MS = 1500
"""MaxWaitMs of the Fetch pipelined behind a Metadata request (an empty partition)."""


def _pipelined_metadata_then_fetch(bootstrap: str) -> tuple[bool, bool]:
    """A Metadata request and a long-poll Fetch sent in one write: (the Fetch parked,
    the Metadata answer came before the Fetch's wait was half over)."""
    topic = unique("fetch-pipelined")
    create_led_topic(bootstrap, topic)
    metadata = requests.metadata([topic]).build(12)
    call1(bootstrap, metadata)  # warm (a cold broker's first answers are slow)
    fetch = _fetch(12, topic, uuid.UUID(int=0), isolation=0)
    fetch = dataclasses.replace(fetch, max_wait=datetime.timedelta(milliseconds=PIPELINE_WAIT_MS))
    times = answer_times(bootstrap, metadata, fetch)
    wait_s = PIPELINE_WAIT_MS / 1000
    return times[2] >= wait_s * 0.9, times[1] < wait_s / 2


def test_a_metadata_answer_does_not_wait_for_a_fetch_pipelined_after_it(pair: Pair) -> None:
    kafka, shoal = pair.run(_pipelined_metadata_then_fetch)
    assert kafka == (True, True)
    assert shoal == kafka
