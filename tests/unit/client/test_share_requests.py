"""The share request builders (client/share_requests.py): the fields each version gets,
RENEW refused where IsRenewAck does not exist, and the response readers."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import share_requests as rq
from shoal.client.ranges import Span, TopicIdPartition
from shoal.protocol import codec
from shoal.protocol.schema import response_schema

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
P10, P11, P20 = TopicIdPartition(T1, 0), TopicIdPartition(T1, 1), TopicIdPartition(T2, 0)


def wire(call: Any, version: int) -> Any:
    """Build at `version`, encode, and decode as the broker would."""
    assert call.min_version <= version <= call.max_version
    request = call.build(version)
    header = codec.request_header_for(call.api_key, version, 7, "test")
    frame = codec.encode_request(header, request)[4:]
    _header, offset = codec.decode_header(frame, call.api_key, version)
    decoded = codec.decode_body(frame, offset, call.api_key, version)
    assert decoded == request
    return decoded


def test_heartbeat_join_beat_and_leave() -> None:
    join = rq.heartbeat("g", "m", 0, ["a", "b"])
    assert (join.api_key, join.min_version, join.max_version) == (76, 1, 1)
    body = wire(join, 1)
    assert (body.group_id, body.member_id, body.member_epoch) == ("g", "m", 0)
    assert body.subscribed_topic_names == ("a", "b")
    assert wire(rq.heartbeat("g", "m", 3, None), 1).subscribed_topic_names is None
    assert wire(rq.heartbeat("g", "m", rq.LEAVE_EPOCH, None), 1).member_epoch == -1


def fetch(**kw: Any) -> Any:
    args: dict[str, Any] = {
        "group_id": "g",
        "member_id": "m",
        "session_epoch": 0,
        "max_wait_ms": 500,
        "max_records": 10,
    }
    return rq.share_fetch(**{**args, **kw})


def test_share_fetch_v2_has_the_acquire_mode_and_v1_has_none() -> None:
    call = fetch(
        partitions=[P10, P11, P20],
        forgotten=[TopicIdPartition(T2, 5)],
        acquire_mode=rq.AcquireMode.RECORD_LIMIT,
        session_epoch=4,
    )
    assert (call.api_key, call.min_version, call.max_version) == (78, 1, 2)
    v2 = wire(call, 2)
    assert (v2.share_acquire_mode, v2.is_renew_ack, v2.share_session_epoch) == (1, False, 4)
    assert (v2.max_records, v2.batch_size, v2.max_wait) == (
        10,
        10,
        datetime.timedelta(milliseconds=500),
    )
    assert [(t.topic_id, [p.partition_index for p in t.partitions]) for t in v2.topics] == [
        (T1, [0, 1]),
        (T2, [0]),
    ]
    assert [(t.topic_id, t.partitions) for t in v2.forgotten_topics_data] == [(T2, (5,))]
    v1 = wire(call, 1)
    assert not hasattr(v1, "share_acquire_mode") and not hasattr(v1, "is_renew_ack")
    assert [t.topic_id for t in v1.topics] == [T1, T2]


def test_share_fetch_acks_in_one_entry_per_topic_or_split_like_librdkafka() -> None:
    acks = {P10: [rq.AckBatch(0, 2, (1,)), rq.AckBatch(3, 4, (2, 3))]}
    merged = wire(fetch(partitions=[P10, P11], acks=acks), 1)
    assert len(merged.topics) == 1
    by_partition = {p.partition_index: p for p in merged.topics[0].partitions}
    assert [
        (b.first_offset, b.last_offset, b.acknowledge_types)
        for b in by_partition[0].acknowledgement_batches
    ] == [(0, 2, (1,)), (3, 4, (2, 3))]
    assert by_partition[1].acknowledgement_batches == ()
    split = wire(fetch(partitions=[P10, P11], acks=acks, split_topics=True), 1)
    assert [[p.partition_index for p in t.partitions] for t in split.topics] == [[1], [0]]


def test_renew_needs_v2_and_is_refused_at_v1() -> None:
    renew = {P10: rq.ack_batches([Span(0, 9)], rq.AcknowledgeType.RENEW)}
    ack = rq.share_acknowledge(group_id="g", member_id="m", session_epoch=3, acks=renew)
    assert (ack.api_key, ack.min_version, ack.max_version) == (79, 2, 2)
    body = wire(ack, 2)
    assert body.is_renew_ack is True
    (topic,) = body.topics
    (partition,) = topic.partitions
    (batch,) = partition.acknowledgement_batches
    assert (batch.first_offset, batch.last_offset, batch.acknowledge_types) == (0, 9, (4,))
    with pytest.raises(rq.FeatureUnsupported, match=r"ShareAcknowledge v1 cannot RENEW"):
        ack.build(1)
    fetch_renew = fetch(acks=renew)
    assert fetch_renew.min_version == 2
    assert wire(fetch_renew, 2).is_renew_ack is True
    with pytest.raises(rq.FeatureUnsupported, match=r"ShareFetch v1 cannot RENEW"):
        fetch_renew.build(1)


def test_renew_in_plain_tuples_is_seen() -> None:
    """Acknowledgements as plain (first, last, types) tuples, as tests write them."""
    plain = {P10: [(0, 4, (1,)), (5, 9, (int(rq.AcknowledgeType.RENEW),))]}
    ack = rq.share_acknowledge(group_id="g", member_id="m", session_epoch=3, acks=plain)
    assert ack.min_version == 2
    assert fetch(acks=plain).min_version == 2
    accepted = {P10: [(0, 4, (1,))]}
    assert (
        rq.share_acknowledge(
            group_id="g", member_id="m", session_epoch=3, acks=accepted
        ).min_version
        == 1
    )


def test_share_acknowledge_without_renew_serves_both_versions() -> None:
    accept = {P20: rq.ack_batches([Span(5, 6, 2), Span(8, 8)], rq.AcknowledgeType.ACCEPT)}
    ack = rq.share_acknowledge(group_id="g", member_id="m", session_epoch=2, acks=accept)
    assert (ack.min_version, ack.max_version) == (1, 2)
    assert wire(ack, 2).is_renew_ack is False
    v1 = wire(ack, 1)
    assert not hasattr(v1, "is_renew_ack")
    assert [
        (b.first_offset, b.last_offset, b.acknowledge_types)
        for b in v1.topics[0].partitions[0].acknowledgement_batches
    ] == [(5, 6, (1,)), (8, 8, (1,))]
    close = wire(rq.share_acknowledge(group_id="g", member_id="m", session_epoch=-1), 1)
    assert (close.share_session_epoch, close.topics) == (-1, ())


def test_hostile_requests_can_still_be_built() -> None:
    """Tests send what the broker must refuse: RENEW without IsRenewAck, null ids."""
    renew = {P10: [rq.AckBatch(0, 0, (4,))]}
    ack = rq.share_acknowledge(
        group_id=None, member_id=None, session_epoch=1, acks=renew, is_renew_ack=False
    )
    body = wire(ack, 2)
    assert (body.group_id, body.member_id, body.is_renew_ack) == (None, None, False)


def fetch_response(**kw: Any) -> Any:
    schema = response_schema(78, 2)
    leader = schema.make("LeaderIdAndEpoch", leader_id=-1, leader_epoch=-1)

    def partition(index: int, code: int, acquired: list[tuple[int, int, int]]) -> Any:
        return schema.make(
            "PartitionData",
            partition_index=index,
            error_code=code,
            acknowledge_error_code=ErrorCode.invalid_record_state if index == 1 else 0,
            current_leader=leader,
            records=b"",
            acquired_records=tuple(
                schema.make("AcquiredRecords", first_offset=f, last_offset=last, delivery_count=c)
                for f, last, c in acquired
            ),
        )

    topics = kw.pop(
        "topics",
        [
            (T1, [partition(0, 0, [(0, 4, 1), (7, 7, 2)]), partition(1, 0, [])]),
            (T2, [partition(0, ErrorCode.not_leader_or_follower, [])]),
        ],
    )
    return schema.response(
        throttle_time=datetime.timedelta(0),
        error_code=0,
        acquisition_lock_timeout=datetime.timedelta(milliseconds=kw.pop("lock_ms", 15_000)),
        responses=tuple(
            schema.make("ShareFetchableTopicResponse", topic_id=t, partitions=tuple(ps))
            for t, ps in topics
        ),
        node_endpoints=(),
    )


def test_response_readers() -> None:
    response = fetch_response()
    assert set(rq.partitions_of(response)) == {P10, P11, P20}
    assert rq.acquired_of(response) == {P10: (Span(0, 4, 1), Span(7, 7, 2))}
    assert rq.partition_errors(response) == {P20: ErrorCode.not_leader_or_follower}
    assert rq.lock_timeout_ms(response) == 15_000
    assert rq.lock_timeout_ms(fetch_response(lock_ms=0)) is None
    v1_ack = response_schema(79, 1).response(
        throttle_time=datetime.timedelta(0), error_code=0, responses=(), node_endpoints=()
    )
    assert rq.lock_timeout_ms(v1_ack) is None


def test_a_partition_answered_twice_is_refused() -> None:
    base = fetch_response()
    twice = fetch_response(topics=[(T1, list(base.responses[0].partitions[:1]))] * 2)
    with pytest.raises(ValueError, match="answered twice"):
        rq.partitions_of(twice)
