"""Every request builder, at every version of its range, encodes and reads back through
the broker's own decoder with the values it was given."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from shoal.client import requests
from shoal.client.calls import Call
from shoal.client.metadata import SHARE_KEY_TYPE
from shoal.protocol import codec
from shoal.protocol.schema import response_schema

CALLS: dict[str, Call] = {
    "metadata": requests.metadata(["a", "b"]),
    "metadata_all": requests.metadata(None),
    "describe_cluster": requests.describe_cluster(),
    "list_offsets": requests.list_offsets({("t", 0): -2, ("t", 1): -1}, isolation_level=1),
    "fetch": requests.fetch({("t", 0): requests.FetchPosition(5, 1000)}, max_wait_ms=200),
    "produce": requests.produce({("t", 0): b""}),
    "create_topic": requests.create_topic("t", partitions=3, configs={"cleanup.policy": "compact"}),
    "delete_topics": requests.delete_topics(["t"]),
    "create_partitions": requests.create_partitions({"t": 4}),
    "describe_configs": requests.describe_configs(requests.TOPIC_RESOURCE, ["t"]),
    "incremental_alter_configs": requests.incremental_alter_configs(
        {
            (requests.GROUP_RESOURCE, "g"): [
                requests.ConfigChange("share.auto.offset.reset", "earliest")
            ]
        }
    ),
    "find_coordinator": requests.find_coordinator("g"),
    "find_share_coordinator": requests.find_coordinator("g:x:0", key_type=SHARE_KEY_TYPE),
    "list_groups": requests.list_groups(types=["share"], states=["Empty"]),
    "delete_groups": requests.delete_groups(["g"]),
    "share_group_describe": requests.share_group_describe(["g"]),
    "describe_share_group_offsets": requests.describe_share_group_offsets("g", ["t"]),
    "alter_share_group_offsets": requests.alter_share_group_offsets("g", {("t", 0): 7}),
    "delete_share_group_offsets": requests.delete_share_group_offsets("g", ["t"]),
    "describe_groups": requests.describe_groups(["g", "h"]),
    "offset_fetch": requests.offset_fetch("g", {"t": [0, 1]}),
    "offset_fetch_all": requests.offset_fetch("g"),
    "offset_commit": requests.offset_commit("g", {("t", 1): 9, ("t", 0): 7, ("u", 0): 3}),
    "offset_delete": requests.offset_delete("g", [("t", 1), ("t", 0), ("u", 2)]),
}


def round_trip(call: Call, version: int) -> Any:
    request = call.build(version)
    assert (int(request.__api_key__), int(request.__version__)) == (call.api_key, version)
    header = codec.request_header_for(call.api_key, version, 1, "c")
    frame = codec.encode_request(header, request)[4:]
    _, offset = codec.decode_header(frame, call.api_key, version)
    return codec.decode_body(frame, offset, call.api_key, version)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_builds_every_version_of_its_range(name: str) -> None:
    call = CALLS[name]
    for version in range(call.min_version, call.max_version + 1):
        assert round_trip(call, version) == call.build(version)


def test_fields_carry_the_values_given() -> None:
    fetch = round_trip(CALLS["fetch"], 12)
    (topic,) = fetch.topics
    assert (topic.topic, int(topic.partitions[0].fetch_offset)) == ("t", 5)
    assert fetch.max_wait.total_seconds() == 0.2 and CALLS["fetch"].wait_ms == 200
    offsets = round_trip(CALLS["list_offsets"], 11)
    assert [int(p.timestamp) for p in offsets.topics[0].partitions] == [-2, -1]
    assert int(offsets.isolation_level) == 1 and CALLS["list_offsets"].min_version == 2
    groups = round_trip(CALLS["list_groups"], 5)
    assert groups.types_filter == ("share",) and groups.states_filter == ("Empty",)
    assert CALLS["list_groups"].min_version == 5
    old_find = round_trip(CALLS["find_coordinator"], 0)
    assert old_find.key == "g"
    assert CALLS["find_share_coordinator"].min_version == 6
    assert round_trip(CALLS["delete_topics"], 5).topic_names == ("t",)
    assert round_trip(CALLS["delete_topics"], 6).topics[0].name == "t"
    alter = round_trip(CALLS["incremental_alter_configs"], 1)
    assert int(alter.resources[0].resource_type) == 32
    assert not requests.produce({}, acks=0).expect_response


def test_consumer_group_builders_carry_the_values_given() -> None:
    assert round_trip(CALLS["describe_groups"], 0).groups == ("g", "h")
    old = round_trip(CALLS["offset_fetch"], 1)
    assert old.group_id == "g" and [int(p) for p in old.topics[0].partition_indexes] == [0, 1]
    assert CALLS["offset_fetch"].min_version == 1 and CALLS["offset_fetch_all"].min_version == 2
    (group,) = round_trip(CALLS["offset_fetch_all"], 9).groups
    assert group.group_id == "g" and group.topics is None
    assert round_trip(CALLS["offset_fetch_all"], 7).topics is None
    for version in (2, 9):
        commit = round_trip(CALLS["offset_commit"], version)
        assert commit.group_id == "g" and int(commit.generation_id_or_member_epoch) == -1
        committed = {
            (t.name, int(p.partition_index)): int(p.committed_offset)
            for t in commit.topics
            for p in t.partitions
        }
        assert committed == {("t", 0): 7, ("t", 1): 9, ("u", 0): 3}
    delete = round_trip(CALLS["offset_delete"], 0)
    assert [(t.name, [int(p.partition_index) for p in t.partitions]) for t in delete.topics] == [
        ("t", [0, 1]),
        ("u", [2]),
    ]


@pytest.mark.parametrize("version", [2, 7, 8, 9])
def test_fetched_offsets_reads_either_response_shape(version: int) -> None:
    s = response_schema(requests.API_OFFSET_FETCH, version)
    partition_type = (
        "OffsetFetchResponsePartitions" if version >= 8 else "OffsetFetchResponsePartition"
    )
    topic_type = "OffsetFetchResponseTopics" if version >= 8 else "OffsetFetchResponseTopic"
    partitions = tuple(
        s.make(
            partition_type,
            partition_index=i,
            committed_offset=offset,
            committed_leader_epoch=-1,
            metadata="",
            error_code=code,
        )
        for i, offset, code in ((0, 5, 0), (1, -1, 0), (2, -1, 3))
    )
    topics = (s.make(topic_type, name="t", partitions=partitions),)
    if version >= 8:
        group = s.make("OffsetFetchResponseGroup", group_id="g", topics=topics, error_code=16)
        response = s.make("OffsetFetchResponse", throttle_time=_ms0(), groups=(group,))
    else:
        response = s.make("OffsetFetchResponse", throttle_time=_ms0(), topics=topics, error_code=16)
    fetched = requests.fetched_offsets(response)
    assert fetched.offsets == {("t", 0): 5, ("t", 1): -1}
    assert fetched.errors == {("t", 2): 3}
    assert fetched.error_code == 16


def _ms0() -> Any:
    return datetime.timedelta(0)
