"""A group without members outlives its last offset, on Kafka 4.2 and on Shoal.

Kafka keeps a group that lost its last committed offset (OffsetDelete) until its next
offsets cleanup pass (`offsets.retention.check.interval.ms`,
GroupCoordinatorShard.cleanupGroupMetadata): Empty, listed, described, deletable,
and again after a restart. The pass then deletes every group that is Empty with no
offsets. Three groups, each committing then losing every offset: a simple group
(offsets committed with no membership), an Empty classic group of protocol type
consumer and an Empty consumer-protocol (KIP-848) group. Observed with ListGroups,
DescribeGroups, AdminClient and Kafka's kafka-consumer-groups (--list, --describe);
then both brokers restart and are observed again, the simple group is deleted, and
both restart with a 2 s cleanup interval: the other two go.
"""

from __future__ import annotations

import time
from typing import Any

from kio.schema.errors import ErrorCode

from shoal.client.requests import describe_groups
from shoal.protocol.schema import request_schema
from tests.differential.conftest import Pair, unique
from tests.differential.test_consumer_groups import (
    _commit_and_close,
    _deleted,
    _described,
    _offset_delete,
    kafka_tool,
    shape,
    until_coordinated,
)
from tests.support.classic_groups import commit_request
from tests.support.clients import create_topic
from tests.support.consumer_groups import PARTITIONS
from tests.support.wire import call1

WAIT_S = 120.0
NAMES = ("simple", "classic", "modern")


def _groups(prefix: str) -> dict[str, str]:
    return {name: f"{prefix}-{name}" for name in NAMES}


def _make_and_empty(bootstrap: str, topic: str, prefix: str) -> dict[str, object]:
    """The three groups commit every partition of `topic`, then lose every offset."""
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    groups = _groups(prefix)
    _commit_and_close(bootstrap, topic, groups["classic"], "classic")
    _commit_and_close(bootstrap, topic, groups["modern"], "consumer")
    committed = call1(
        bootstrap, commit_request(9, groups["simple"], {(topic, p): 5 for p in range(PARTITIONS)})
    )
    assert {ErrorCode(p.error_code) for t in committed.topics for p in t.partitions} == {
        ErrorCode.none
    }
    every = [(topic, p) for p in range(PARTITIONS)]
    return {
        name: _deleted(until_coordinated(bootstrap, _offset_delete(group, every)))
        for name, group in groups.items()
    }


def _ready(bootstrap: str, prefix: str) -> None:
    """Wait until the group coordinator answers DescribeGroups (after a restart)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        response = call1(bootstrap, describe_groups([_groups(prefix)["simple"]]).build(5))
        if response.groups[0].error_code == ErrorCode.none or time.monotonic() > deadline:
            return
        time.sleep(0.5)


def _listed(bootstrap: str, prefix: str) -> list[tuple[str, str, str, str]]:
    response = call1(
        bootstrap,
        request_schema(16, 5).make("ListGroupsRequest", states_filter=(), types_filter=()),
    )
    assert response.error_code == ErrorCode.none
    return sorted(
        (g.group_id[len(prefix) :], g.protocol_type, g.group_state, g.group_type)
        for g in response.groups
        if g.group_id.startswith(prefix)
    )


def _views(bootstrap: str, prefix: str, *, tools: bool) -> dict[str, Any]:
    """What ListGroups, DescribeGroups v5, AdminClient and (with `tools`) Kafka's
    kafka-consumer-groups show of the three groups."""
    _ready(bootstrap, prefix)
    groups = _groups(prefix)
    described = call1(bootstrap, describe_groups(list(groups.values())).build(5))
    seen: dict[str, Any] = {
        "listed": _listed(bootstrap, prefix),
        "described": sorted(
            (
                g.group_id[len(prefix) :],
                ErrorCode(g.error_code).name,
                g.group_state,
                g.protocol_type,
                g.protocol_data,
                len(g.members),
            )
            for g in described.groups
        ),  # Kafka answers in its coordinator shards' order
        "admin": {name: _described(bootstrap, group) for name, group in groups.items()},
    }
    if tools:
        listed = kafka_tool(bootstrap, "--list")
        seen["tool list"] = sorted(
            line[len(prefix) :] for line in listed[1].split() if line.startswith(prefix)
        )
        for name, group in groups.items():
            code, out, err = kafka_tool(bootstrap, "--describe", "--group", group)
            seen[f"tool describe {name}"] = (shape((code, out, err)), out.replace(prefix, "P"))
    return seen


def _delete(bootstrap: str, group: str) -> str:
    response = call1(
        bootstrap, request_schema(42, 2).make("DeleteGroupsRequest", groups_names=(group,))
    )
    (result,) = response.results
    return ErrorCode(result.error_code).name


def _gone(bootstrap: str, prefix: str) -> dict[str, Any]:
    """Wait (bounded) for the cleanup pass to delete every group of `prefix`."""
    deadline = time.monotonic() + WAIT_S
    while _listed(bootstrap, prefix) and time.monotonic() < deadline:
        time.sleep(0.5)
    groups = _groups(prefix)
    described = call1(bootstrap, describe_groups([groups["classic"]]).build(5))
    return {
        "listed": _listed(bootstrap, prefix),
        "classic described": (
            described.groups[0].group_state,
            ErrorCode(described.groups[0].error_code).name,
        ),
        "delete modern": _delete(bootstrap, groups["modern"]),
    }


def test_group_without_members_outlives_its_last_offset(pair: Pair) -> None:
    topic, prefix = unique("keep"), unique("keep-g")
    kafka, shoal = pair.run(_make_and_empty, topic, prefix)
    assert shoal == kafka
    assert {name: error for name, (error, _) in kafka.items()} == dict.fromkeys(NAMES, "none")

    kafka, shoal = pair.run(_views, prefix, tools=True)
    assert shoal == kafka
    assert kafka["listed"] == [
        ("-classic", "consumer", "Empty", "classic"),
        ("-modern", "consumer", "Empty", "consumer"),
        ("-simple", "", "Empty", "classic"),
    ]
    assert kafka["tool list"] == ["-classic", "-modern", "-simple"]

    for broker in (pair.kafka, pair.shoal):
        broker.restart()
    after = pair.run(_views, prefix, tools=False)
    assert after == ({k: kafka[k] for k in after[0]},) * 2  # a restart changes nothing
    assert pair.run(_delete, _groups(prefix)["simple"]) == ("none", "none")

    for broker in (pair.kafka, pair.shoal):
        broker.overrides.append("offsets.retention.check.interval.ms=2000")
        broker.restart()
    kafka, shoal = pair.run(_gone, prefix)
    assert shoal == kafka
    assert kafka == {
        "listed": [],
        "classic described": ("Dead", "none"),
        "delete modern": "group_id_not_found",
    }
