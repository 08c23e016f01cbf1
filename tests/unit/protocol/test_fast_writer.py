"""The composed writers (protocol/fast_writer.py) write exactly kio's bytes.

The oldest and newest request and response classes of every API kio knows (and of
Shoal's extension APIs, protocol/extensions/), every
version of the APIs on the per-record path (Produce, Fetch, ShareFetch,
ShareAcknowledge), the headers and every coordinator record class Shoal defines are
written by both with generated instances (tagged fields set and unset, nulls, empty
and non-empty arrays); a value kio refuses must be refused alike."""

from __future__ import annotations

import io
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_writer as kio_entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import Records

from shoal.group.records import CODEC as GROUP_CODEC
from shoal.protocol import codec, fast_writer
from shoal.share_coordinator.records import CODEC as SHARE_CODEC
from shoal.txn.records import CODEC as TXN_CODEC

st.register_type_strategy(Records, st.binary(max_size=16))  # type: ignore[type-abstract]


HOT_APIS = frozenset({0, 1, 78, 79})


def _message_classes() -> list[Any]:
    classes: list[Any] = [RequestHeaderV1, RequestHeaderV2, ResponseHeaderV0, ResponseHeaderV1]
    for api_key, name in sorted(codec.API_NAMES.items()):  # kio's and Shoal's extensions
        versions = sorted(codec.SCHEMA_NAMES[name])
        if api_key not in HOT_APIS:
            versions = [versions[0], versions[-1]]
        for version in versions:
            for entity_type in (EntityType.request, EntityType.response):
                cls = codec._entity_class(api_key, version, entity_type)
                if cls is not None:
                    classes.append(cls)
    return classes


def _record_classes() -> list[Any]:
    classes = []
    for record_codec in (GROUP_CODEC, SHARE_CODEC, TXN_CODEC):
        for record_type in record_codec._types.values():
            classes += [record_type.key_class, record_type.value_class]
    return classes


def _written(writer: Any, entity: Any) -> bytes | type[Exception]:
    buffer = io.BytesIO()
    try:
        writer(buffer, entity)
    except (struct.error, TypeError, ValueError, OverflowError) as exc:  # kio's refusals
        return type(exc)
    return buffer.getvalue()


CLASSES = _message_classes()
RECORD_CLASSES = _record_classes()


@pytest.mark.parametrize(
    "cls", CLASSES + RECORD_CLASSES, ids=lambda c: f"{c.__module__}.{c.__name__}"
)
def test_same_bytes_as_kio_for_every_message_class(cls: Any) -> None:
    @settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_type(cls))
    def check(entity: Any) -> None:
        theirs = _written(kio_entity_writer(cls), entity)
        assert _written(fast_writer.entity_writer(cls), entity) == theirs

    check()


def test_every_api_is_covered() -> None:
    assert len(CLASSES) > 150
    assert {int(getattr(c, "__api_key__", -1)) for c in CLASSES} >= HOT_APIS
    assert len(RECORD_CLASSES) >= 20


def test_a_set_tagged_field_is_written_as_kio_writes_it() -> None:
    """Every share state write sets its delivery complete count (tag 0): the composed
    writer writes that section itself, byte for byte as kio."""
    from shoal.share_coordinator.records import ShareUpdateValue, StateBatchEntry

    for count in (-1, 0, 5, 300):
        value = ShareUpdateValue(
            snapshot_epoch=3,
            leader_epoch=0,
            start_offset=1234,
            delivery_complete_count=count,
            state_batches=(
                StateBatchEntry(
                    first_offset=1234, last_offset=1240, delivery_state=4, delivery_count=1
                ),
            ),
        )
        mine = _written(fast_writer.entity_writer(ShareUpdateValue), value)
        assert mine == _written(kio_entity_writer(ShareUpdateValue), value)
        assert isinstance(mine, bytes)


@pytest.mark.parametrize("size", [0, 126, 127, 128, 300, 16382, 16383, 16384, 70000])
def test_compact_lengths_of_every_width_as_kio(size: int) -> None:
    """Compact lengths (size + 1) of one, two and three varint bytes: records and a
    string of `size` bytes in a ShareFetch response."""
    import datetime
    import uuid

    from kio.schema.errors import ErrorCode

    from shoal.protocol.schema import response_schema

    schema = response_schema(78, 2)
    partition = schema.make(
        "PartitionData",
        partition_index=0,
        error_code=ErrorCode.none,
        error_message="e" * size,
        acknowledge_error_code=ErrorCode.none,
        acknowledge_error_message=None,
        current_leader=schema.make("LeaderIdAndEpoch", leader_id=1, leader_epoch=0),
        records=bytes(size),
        acquired_records=(),
    )
    response = schema.response(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        error_message=None,
        acquisition_lock_timeout=datetime.timedelta(seconds=30),
        responses=(
            schema.make(
                "ShareFetchableTopicResponse", topic_id=uuid.uuid4(), partitions=(partition,)
            ),
        ),
        node_endpoints=(),
    )
    cls = type(response)
    mine = _written(fast_writer.entity_writer(cls), response)
    assert isinstance(mine, bytes) and len(mine) > 2 * size
    assert mine == _written(kio_entity_writer(cls), response)


@pytest.mark.parametrize("header_cls", [ResponseHeaderV0, ResponseHeaderV1])
@pytest.mark.parametrize("correlation_id", [0, 7, -1, 2**31 - 1, -(2**31)])
def test_fixed_codes_pack_a_response_header_as_kio(header_cls: Any, correlation_id: int) -> None:
    """codec.encode_response packs the header from its correlation id."""
    packed = struct.pack(">" + fast_writer.fixed_codes(header_cls), correlation_id)
    assert packed == _written(
        kio_entity_writer(header_cls), header_cls(correlation_id=correlation_id)
    )


def test_fixed_codes_refuse_a_class_with_other_fields() -> None:
    with pytest.raises(ValueError, match="client_id"):
        fast_writer.fixed_codes(RequestHeaderV2)
