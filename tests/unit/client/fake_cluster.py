"""An in-memory, scripted Kafka cluster that executes the client core's effects.

`FakeCluster.run(op)` drives an operation: `Sleep` advances the manual clock, `Connect`
answers every API at kio's versions, `Send` builds the request at the version the
client would choose and hands it to the cluster's current state, which answers with
a real kio response (or a scripted fault: an error code, a dropped connection).
Everything the client sent is in `sent` as (node id, api key, request).
"""

from __future__ import annotations

import datetime
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.static.primitive import i32Timedelta

from shoal.client.bootstrap import Node
from shoal.client.operations import Connect, Disconnected, Effect, Op, Send, Sleep, drive
from shoal.client.versions import choose_version
from shoal.clock import ManualClock
from shoal.protocol.schema import response_schema

T = TypeVar("T")
VERSIONS = {
    key: (min(schema_name_map[name]), max(schema_name_map[name]))
    for key, name in api_key_map.items()
}
NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


def node(node_id: int) -> Node:
    return Node("broker", 9000 + node_id, node_id)


Fault = Callable[[Node, Any], Any]
"""Scripted answer to one request: returns a response or raises Disconnected."""


@dataclass
class FakeCluster:
    brokers: list[int] = field(default_factory=lambda: [1, 2, 3])
    leaders: dict[tuple[str, int], int] = field(default_factory=dict)
    coordinator_id: int = 1
    clock: ManualClock = field(default_factory=ManualClock)
    down: set[int] = field(default_factory=set)
    """Nodes that refuse connections."""
    faults: dict[int, deque[Fault]] = field(default_factory=dict)
    """api key -> scripted answers, used before the normal one."""
    sent: list[tuple[int, int, Any]] = field(default_factory=list)
    slept_ms: list[int] = field(default_factory=list)

    def script(self, api_key: int, *faults: Fault) -> None:
        self.faults.setdefault(api_key, deque()).extend(faults)

    def run(self, op: Op[T]) -> T:
        return drive(op, self.execute)

    def execute(self, effect: Effect) -> Any:
        if isinstance(effect, Sleep):
            assert effect.ms >= 0
            self.slept_ms.append(effect.ms)
            self.clock.advance(effect.ms)
            return None
        target = effect.node
        if target.port - 9000 in self.down:
            self.clock.advance(1)
            raise Disconnected(target, "connection refused", phase="connect")
        if isinstance(effect, Connect):
            return VERSIONS
        assert isinstance(effect, Send)
        request = effect.call.build(choose_version(effect.call, VERSIONS))
        self.sent.append((target.port - 9000, effect.call.api_key, request))
        self.clock.advance(1)
        queue = self.faults.get(effect.call.api_key)
        if queue:
            return queue.popleft()(target, request)
        return self.answer(target, request)

    # ---- normal answers

    def answer(self, target: Node, request: Any) -> Any:
        key, version = int(request.__api_key__), int(request.__version__)
        s = response_schema(key, version)
        if key == 3:
            return self.metadata_response(request)
        if key == 10:
            return s.response(
                throttle_time=NO_THROTTLE,
                coordinators=(
                    s.make(
                        "Coordinator",
                        key=request.coordinator_keys[0],
                        node_id=self.coordinator_id,
                        host="broker",
                        port=9000 + self.coordinator_id,
                        error_code=ErrorCode.none,
                        error_message=None,
                    ),
                ),
            )
        if key == 2:
            return list_offsets_response(
                request, lambda topic, p: self.offset_error(target, topic, p)
            )
        if key == 42:
            here = target.port - 9000 == self.coordinator_id
            code = ErrorCode.none if here else ErrorCode.not_coordinator
            return delete_groups_response(request, code)
        raise AssertionError(f"the fake cluster does not serve api {key}")

    def offset_error(self, target: Node, topic: str, partition: int) -> ErrorCode:
        leader = self.leaders.get((topic, partition))
        return ErrorCode.none if leader == target.port - 9000 else ErrorCode.not_leader_or_follower

    def metadata_response(self, request: Any) -> Any:
        s = response_schema(3, int(request.__version__))
        asked = None if request.topics is None else [str(t.name) for t in request.topics]
        topics: dict[str, list[tuple[int, int]]] = {}
        for (topic, partition), leader in sorted(self.leaders.items()):
            topics.setdefault(topic, []).append((partition, leader))
        names = sorted(topics) if asked is None else asked
        return s.response(
            throttle_time=NO_THROTTLE,
            brokers=tuple(
                s.make("MetadataResponseBroker", node_id=b, host="broker", port=9000 + b, rack=None)
                for b in self.brokers
            ),
            cluster_id="fake",
            controller_id=self.brokers[0],
            error_code=ErrorCode.none,
            topics=tuple(
                s.make(
                    "MetadataResponseTopic",
                    error_code=ErrorCode.none
                    if name in topics
                    else ErrorCode.unknown_topic_or_partition,
                    name=name,
                    topic_id=uuid.UUID(int=1),
                    is_internal=False,
                    topic_authorized_operations=-2147483648,
                    partitions=tuple(
                        s.make(
                            "MetadataResponsePartition",
                            error_code=ErrorCode.none,
                            partition_index=p,
                            leader_id=leader,
                            leader_epoch=0,
                            replica_nodes=(leader,),
                            isr_nodes=(leader,),
                            offline_replicas=(),
                        )
                        for p, leader in topics.get(name, [])
                    ),
                )
                for name in names
            ),
        )


def list_offsets_response(request: Any, error_of: Callable[[str, int], ErrorCode]) -> Any:
    s = response_schema(2, int(request.__version__))
    return s.response(
        throttle_time=NO_THROTTLE,
        topics=tuple(
            s.make(
                "ListOffsetsTopicResponse",
                name=t.name,
                partitions=tuple(
                    s.make(
                        "ListOffsetsPartitionResponse",
                        partition_index=p.partition_index,
                        error_code=error_of(str(t.name), int(p.partition_index)),
                        timestamp=-1,
                        offset=100 + int(p.partition_index),
                        leader_epoch=0,
                    )
                    for p in t.partitions
                ),
            )
            for t in request.topics
        ),
    )


def delete_groups_response(request: Any, code: ErrorCode) -> Any:
    s = response_schema(42, int(request.__version__))
    return s.response(
        throttle_time=NO_THROTTLE,
        results=tuple(
            s.make("DeletableGroupResult", group_id=g, error_code=code)
            for g in request.groups_names
        ),
    )
