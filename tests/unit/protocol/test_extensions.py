"""Shoal's extension APIs (protocol/extensions/): declared as kio declares Kafka's, found
through the codec's merged index, encoded and decoded by kio's generic readers and
writers, and served and advertised like any API. (test_fast_writer.py checks the
composed writers write kio's bytes for them too.)"""

from __future__ import annotations

import dataclasses
import datetime
import io
import uuid

from kio.schema.index import api_key_map
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

from shoal.client.share_browse import share_group_browse
from shoal.client.versions import api_label
from shoal.protocol import codec, extensions
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.server.handler_services import ApiRange
from shoal.server.registry import api_ranges, load_all_handlers

KEY = extensions.SHARE_GROUP_BROWSE


def test_extension_keys_are_outside_kafkas_and_named() -> None:
    assert KEY == 30_000 and KEY not in api_key_map
    assert min(extensions.API_KEYS) > max(api_key_map)
    assert codec.api_name(KEY) == "share_group_browse"
    assert api_label(KEY) == "ShareGroupBrowse (API 30000)"
    for version, directions in extensions.SCHEMAS["share_group_browse"].items():
        for entity_type in (EntityType.request, EntityType.response):
            cls = codec._entity_class(KEY, version, entity_type)
            assert dataclasses.is_dataclass(cls) and cls.__api_key__ == KEY
            assert (cls.__version__, cls.__type__) == (version, entity_type)
            assert directions[entity_type].endswith(f":{cls.__name__}")
    assert codec.request_class(KEY, 1) is None  # an unknown version, as for kio's


def test_a_browse_request_round_trips_through_the_codec() -> None:
    request = share_group_browse("g", "t", [0, 2], max_entries=7).build(0)
    frame = codec.encode_request(codec.request_header_for(KEY, 0, 41, "cli"), request)[4:]
    assert codec.peek_key_version(frame) == (KEY, 0)
    header, offset = codec.decode_header(frame, KEY, 0)
    assert header.correlation_id == 41
    assert codec.decode_body(frame, offset, KEY, 0) == request


def test_a_browse_response_is_kios_own_encoding() -> None:
    schema = response_schema(KEY, 0)
    entry = schema.make(
        "InFlightEntry",
        first_offset=5,
        last_offset=7,
        state=1,
        state_name="ACQUIRED",
        delivery_count=2,
        member_id="m1",
        lock_expires_in_ms=29_000,
        pending_write=False,
    )
    partition = schema.make(
        "BrowsedPartition",
        partition_index=0,
        error_code=ErrorCode.none,
        loaded=True,
        start_offset=5,
        end_offset=7,
        delivery_complete_count=0,
        truncated=True,
        entries=(entry,),
    )
    response = schema.response(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        topic_id=uuid.uuid4(),
        partitions=(partition,),
    )
    frame = bytes(codec.encode_response(KEY, 0, 9, response))
    assert codec.decode_response(frame[4:], KEY, 0) == (9, response)
    buffer = io.BytesIO()
    entity_writer(type(response))(buffer, response)
    assert frame.endswith(buffer.getvalue())  # header, then exactly kio's bytes
    decoded, size = entity_reader(type(response))(buffer.getvalue(), 0)
    assert (decoded, size) == (response, len(buffer.getvalue()))


def test_the_redelivery_due_time_is_a_tagged_field_left_out_when_unset() -> None:
    """RedeliveryDueInMs (tag 0 of InFlightEntry) is written only when not -1, so an
    entry without a delay has v0's first bytes, and one with it reads back."""
    schema = response_schema(KEY, 0)
    fields = {
        "first_offset": 5,
        "last_offset": 5,
        "state": 0,
        "state_name": "AVAILABLE",
        "delivery_count": 1,
        "lock_expires_in_ms": -1,
        "pending_write": False,
    }
    plain = schema.make("InFlightEntry", **fields)
    held = schema.make("InFlightEntry", **fields, redelivery_due_in_ms=1_500)
    assert plain.redelivery_due_in_ms == -1

    def encoded(entry: object) -> bytes:
        buffer = io.BytesIO()
        entity_writer(type(entry))(buffer, entry)
        return buffer.getvalue()

    assert encoded(plain).endswith(b"\x00")  # no tagged fields
    assert encoded(held) == encoded(plain)[:-1] + bytes.fromhex("01000800000000000005dc")
    assert entity_reader(type(held))(encoded(held), 0)[0] == held


def _encoded(entity: object) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def test_delivery_holds_are_tagged_fields_left_out_when_nothing_is_held() -> None:
    """Key order and scheduled delivery (tags 1-2 of InFlightEntry, 0-5 of
    BrowsedPartition, among them an array of BlockedKey) are written only when set:
    a partition and an entry with nothing held back have the bytes they had before
    the fields existed, and set ones read back through kio's own reader."""
    schema = response_schema(KEY, 0)
    entry_fields = {
        "first_offset": 5,
        "last_offset": 5,
        "state": 0,
        "state_name": "AVAILABLE",
        "delivery_count": 0,
        "lock_expires_in_ms": -1,
        "pending_write": False,
    }
    plain_entry = schema.make("InFlightEntry", **entry_fields)
    assert (plain_entry.deliver_at_ms, plain_entry.key_blocked) == (-1, False)
    assert _encoded(plain_entry).endswith(b"\x00")
    waiting = schema.make("InFlightEntry", **entry_fields, deliver_at_ms=1_764_400_000_000)
    blocked = schema.make("InFlightEntry", **entry_fields, key_blocked=True)
    # one tagged field: count 1, tag 1, size 8, the epoch ms; tag 2, size 1, true
    assert _encoded(waiting) == _encoded(plain_entry)[:-1] + bytes.fromhex("0101080000019ace6f6c00")
    assert _encoded(blocked) == _encoded(plain_entry)[:-1] + bytes.fromhex("01020101")
    for entry in (waiting, blocked):
        assert entity_reader(type(entry))(_encoded(entry), 0)[0] == entry

    partition_fields = {
        "partition_index": 0,
        "error_code": ErrorCode.none,
        "loaded": True,
        "start_offset": 5,
        "end_offset": 9,
        "delivery_complete_count": 0,
        "truncated": False,
        "entries": (plain_entry,),
    }
    plain = schema.make("BrowsedPartition", **partition_fields)
    assert _encoded(plain).endswith(b"\x00\x00")  # the entry's and the partition's tags
    held = schema.make(
        "BrowsedPartition",
        **partition_fields,
        blocked_keys=2,
        blocked_records=7,
        top_blocked_keys=(
            schema.make("BlockedKey", key=b"k1", held_records=5),
            schema.make("BlockedKey", key=b"\xff", held_records=2),
        ),
        scheduled_records=3,
        next_due_ms=1_764_400_000_000,
        malformed_deliver_at=1,
    )
    assert _encoded(held).startswith(_encoded(plain)[:-1] + b"\x06")  # six tagged fields
    assert entity_reader(type(held))(_encoded(held), 0)[0] == held


def test_the_broker_serves_and_advertises_the_extension() -> None:
    assert ApiRange(KEY, 0, 0) in api_ranges(load_all_handlers())
