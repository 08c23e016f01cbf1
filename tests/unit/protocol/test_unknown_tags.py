"""Unknown tagged fields are skipped, as Kafka's readers skip them.

Each frame is a valid request encoded by kio, then given unknown tagged fields at one
level: the request header, the body, a struct inside an array, a struct three levels
down, and a struct inside a known tagged field (whose size must shrink with them).
The decoded request must equal the one decoded without them. A size past the end of
the request is still refused.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from kio.schema.fetch.v15 import request as fetch15
from kio.schema.metadata.v12 import request as metadata12
from kio.schema.produce.v11 import request as produce11
from kio.schema.share_fetch.v1 import request as share_fetch1
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from shoal.protocol import codec
from tests.support.tagged_frames import (
    API_VERSIONS,
    HEADER_END,
    fields,
    request_frame,
    section,
    with_tags,
)
from tests.support.wire_fuzz import uvarint

TOPIC_ID = uuid.UUID("6c1f9d0c-7d1e-4b69-9d53-2b3f7a5e0c11")


def _decode(frame: bytes) -> tuple[Any, Any]:
    key, version = codec.peek_key_version(frame)
    header, offset = codec.decode_header(frame, key, version)
    return header, codec.decode_body(frame, offset, key, version)


def test_header_and_body_of_api_versions() -> None:
    frame = request_frame(API_VERSIONS)
    assert frame[HEADER_END] == 0
    tagged = frame[:HEADER_END] + section(3, 9000) + frame[HEADER_END + 1 : -1] + section(0, 1)
    header, body = _decode(tagged)
    assert (header.correlation_id, header.client_id) == (7, "cli")
    assert body == API_VERSIONS


def _metadata() -> Any:
    topics = (
        metadata12.MetadataRequestTopic(topic_id=None, name="a"),
        metadata12.MetadataRequestTopic(topic_id=TOPIC_ID, name="bb"),
    )
    return metadata12.MetadataRequest(
        topics=topics, allow_auto_topic_creation=False, include_topic_authorized_operations=True
    )


def test_metadata_topic_structs_and_body() -> None:
    request = _metadata()
    frame = with_tags(request_frame(request), request.topics[1], section(1, 2, size=300))
    frame = with_tags(frame, request.topics[0], section(*range(130)))  # 2-byte count
    frame = frame[:-1] + section(5)
    assert _decode(frame)[1] == request


def _share_fetch() -> Any:
    batch = share_fetch1.AcknowledgementBatch(
        first_offset=i64(10), last_offset=i64(12), acknowledge_types=(i8(1), i8(2), i8(1))
    )
    partition = share_fetch1.FetchPartition(
        partition_index=i32(3), acknowledgement_batches=(batch,)
    )
    return share_fetch1.ShareFetchRequest(
        group_id="g",
        member_id="m",
        share_session_epoch=i32(1),
        max_wait=i32Timedelta.parse(timedelta(milliseconds=500)),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        max_records=i32(500),
        batch_size=i32(500),
        topics=(share_fetch1.FetchTopic(topic_id=TOPIC_ID, partitions=(partition,)),),
        forgotten_topics_data=(),
    )


def test_share_fetch_three_levels_down() -> None:
    request = _share_fetch()
    partition = request.topics[0].partitions[0]
    frame = with_tags(request_frame(request), request.topics[0], section(77, size=0))
    frame = with_tags(frame, partition.acknowledgement_batches[0], section(4))
    assert _decode(frame)[1] == request


def _fetch(cluster_id: str | None = None) -> Any:
    partition = fetch15.FetchPartition(
        partition=i32(0),
        current_leader_epoch=i32(-1),
        fetch_offset=i64(5),
        last_fetched_epoch=i32(-1),
        log_start_offset=i64(-1),
        partition_max_bytes=i32(1 << 20),
    )
    return fetch15.FetchRequest(
        cluster_id=cluster_id,
        replica_state=fetch15.ReplicaState(replica_id=i32(-1), replica_epoch=i64(-1)),
        max_wait=i32Timedelta.parse(timedelta(milliseconds=100)),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        isolation_level=i8(0),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(fetch15.FetchTopic(topic_id=TOPIC_ID, partitions=(partition,)),),
        forgotten_topics_data=(),
        rack_id="",
    )


def _replica_state_field(unknown: bytes = b"\x00") -> bytes:
    """Tag 1 of Fetch v15+ (replica_state: int32 id, int64 epoch, its own tags)."""
    state = b"\x00\x00\x00\x02" + b"\x00" * 7 + b"\x03" + unknown
    return uvarint(1) + uvarint(len(state)) + state


def test_unknown_tags_inside_a_known_tagged_struct() -> None:
    """The known field's size shrinks with the unknown fields taken out of it; tags out
    of order (99 before 0 and 1) are read as Kafka reads them, in any order."""
    plain = request_frame(_fetch())
    assert plain.endswith(b"\x00")
    cluster = uvarint(0) + uvarint(3) + b"\x03k1"
    tail = uvarint(4) + fields(99) + cluster + _replica_state_field(section(6, 7, size=200))
    tail += fields(3)
    _, body = _decode(plain[:-1] + tail)
    assert body.cluster_id == "k1"
    assert (body.replica_state.replica_id, body.replica_state.replica_epoch) == (2, 3)
    assert body.topics == _fetch().topics


def test_a_known_tag_twice_keeps_the_last_value_as_kafka_does() -> None:
    plain = request_frame(_fetch())
    first = uvarint(0) + uvarint(3) + b"\x03k1"
    second = uvarint(0) + uvarint(3) + b"\x03k2"
    assert _decode(plain[:-1] + uvarint(3) + first + fields(50) + second)[1].cluster_id == "k2"


def _replica_state(replica_id: int, epoch: int) -> bytes:
    """Fetch's tag 1, ReplicaState: replica id, epoch, an empty tag section."""
    content = replica_id.to_bytes(4, "big", signed=True) + epoch.to_bytes(8, "big") + b"\x00"
    return uvarint(1) + uvarint(len(content)) + content


def test_a_struct_typed_tag_twice_keeps_the_last_value() -> None:
    """Found by the wire fuzzer: kio refused a repeated ReplicaState (a struct-typed
    tag) as unknown; Kafka reads both and keeps the last."""
    plain = request_frame(_fetch())
    body = _decode(plain[:-1] + uvarint(2) + _replica_state(3, 7) + _replica_state(4, 9))[1]
    assert (body.replica_state.replica_id, body.replica_state.replica_epoch) == (4, 9)
    assert body.topics == _fetch().topics


def test_a_known_tag_whose_size_disagrees_with_its_content_is_refused() -> None:
    """Found by the wire fuzzer: a known tag whose size disagrees with its content made
    kio read the rest of the section as other tags. Kafka reads a known tag by its
    type, so the request is malformed either way; the refusal now says so."""
    plain = request_frame(_fetch())
    content = _replica_state(4, 9)[2:]
    longer = uvarint(1) + uvarint(len(content) + 1) + content + b"\x00"
    with pytest.raises(codec.ProtocolError, match="holds a different size"):
        _decode(plain[:-1] + uvarint(1) + longer)
    with pytest.raises(codec.ProtocolError, match="malformed fetch v15 body"):
        _decode(plain[:-1] + uvarint(2) + uvarint(1) + uvarint(0) + _replica_state(4, 9))


def test_produce_partition_level() -> None:
    partition = produce11.PartitionProduceData(index=i32(0), records=None)
    request = produce11.ProduceRequest(
        transactional_id=None,
        acks=i16(-1),
        timeout=i32Timedelta.parse(timedelta(seconds=1)),
        topic_data=(produce11.TopicProduceData(name="t", partition_data=(partition,)),),
    )
    frame = with_tags(request_frame(request), partition, section(12))
    assert _decode(frame)[1] == request


@pytest.mark.parametrize(
    "bad",
    [
        uvarint(1) + uvarint(9) + uvarint(50) + b"xx",  # size past the end
        uvarint(2) + fields(9),  # one field fewer than the count
        uvarint(1) + uvarint(9),  # no size
        uvarint(1) + b"\xff\xff\xff\xff\xff\x01" + b"\x00",  # tag varint too long
    ],
)
def test_malformed_sections_are_still_refused(bad: bytes) -> None:
    frame = request_frame(API_VERSIONS)
    with pytest.raises(codec.ProtocolError, match="malformed api_versions v3 body"):
        _decode(frame[:-1] + bad)
    with pytest.raises(codec.ProtocolError, match="malformed request header"):
        _decode(frame[:HEADER_END] + bad)


def test_unknown_tag_before_a_truncated_body_is_refused() -> None:
    frame = request_frame(_metadata())
    request = _metadata()
    cut = with_tags(frame, request.topics[0], section(8))[:-4]
    with pytest.raises(codec.ProtocolError, match="malformed metadata v12 body"):
        _decode(cut)
