"""`shoal transactions describe-producers|abort|find-hanging`: the partition-side
sub-commands of kafka-transactions.sh, built on DescribeProducers (61),
ListTransactions (66), DescribeTransactions (65) and WriteTxnMarkers (27).

  describe-producers --topic T --partition P [--broker-id N]
      ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp
      CurrentTransactionStartOffset
  abort --topic T --partition P (--start-offset O |
        --producer-id N --producer-epoch E --coordinator-epoch C)
      finds the producer whose open transaction starts at O (DescribeProducers) and
      writes an ABORT marker for it on the partition's leader; prints nothing on success
  find-hanging (--broker-id N | --topic T [--partition P]) [--max-transaction-timeout MIN]
      Topic Partition ProducerId ProducerEpoch CoordinatorEpoch StartOffset
      LastTimestamp Duration(min)

A transaction is hanging (as in Kafka) when its producer last wrote more than the max
transaction timeout (minutes, default 15) ago and the coordinator does not expect to
write its marker: no transactional id has that producer id, the id is unknown, or its
ongoing transaction does not list the partition.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

from shoal.cli.kafka_options import ToolFailed
from shoal.cli.tables import format_table
from shoal.client import Client, requests
from shoal.client.bootstrap import Node
from shoal.client.errors import ErrorCode, error_name
from shoal.client.metadata import TopicPartition
from shoal.clock import SystemClock

MAX_TRANSACTION_TIMEOUT_MIN_DEFAULT = 15
"""find-hanging's --max-transaction-timeout default (minutes), as Kafka's tool."""
_MS_PER_MIN = 60_000
NONE = -1

PRODUCER_HEADERS = [
    "ProducerId",
    "ProducerEpoch",
    "LatestCoordinatorEpoch",
    "LastSequence",
    "LastTimestamp",
    "CurrentTransactionStartOffset",
]
HANGING_HEADERS = [
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
]


def add_subparsers(sub: Any) -> None:
    describing = sub.add_parser(
        "describe-producers", help="describe the states of active producers for a topic partition"
    )
    describing.add_argument("--broker-id", type=int, metavar="ID")
    describing.add_argument("--topic", required=True)
    describing.add_argument("--partition", type=int, required=True)
    aborting = sub.add_parser(
        "abort", help="abort a hanging transaction (requires administrative privileges)"
    )
    aborting.add_argument("--topic", required=True)
    aborting.add_argument("--partition", type=int, required=True)
    aborting.add_argument("--start-offset", type=int, metavar="OFFSET")
    aborting.add_argument("--producer-id", type=int, metavar="ID")
    aborting.add_argument("--producer-epoch", type=int, metavar="EPOCH")
    aborting.add_argument("--coordinator-epoch", type=int, metavar="EPOCH")
    hanging = sub.add_parser("find-hanging", help="find hanging transactions")
    hanging.add_argument("--broker-id", type=int, metavar="ID")
    hanging.add_argument("--topic")
    hanging.add_argument("--partition", type=int)
    hanging.add_argument(
        "--max-transaction-timeout",
        type=int,
        default=MAX_TRANSACTION_TIMEOUT_MIN_DEFAULT,
        metavar="MINUTES",
    )


def act(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    if args.action == "describe-producers":
        return _describe_producers(client, args, out)
    if args.action == "abort":
        return _abort(client, args)
    return _find_hanging(client, args, out)


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    partition: TopicPartition
    producer: Any
    """The DescribeProducers ProducerState."""


def _describe_producers(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    tp = (args.topic, args.partition)
    where = "leader" if args.broker_id is None else f"broker {args.broker_id}"
    try:
        producers = describe_producers(client, [tp], broker_id=args.broker_id)[tp]
    except ToolFailed as exc:
        raise ToolFailed(
            f"Failed to describe producers for partition {_name(tp)} on {where}: {exc}"
        ) from exc
    rows = [
        [
            str(p.producer_id),
            str(p.producer_epoch),
            str(p.coordinator_epoch),
            str(p.last_sequence),
            str(p.last_timestamp),
            "None" if p.current_txn_start_offset == NONE else str(p.current_txn_start_offset),
        ]
        for p in producers
    ]
    _print(PRODUCER_HEADERS, rows, out)
    return 0


def describe_producers(
    client: Client, partitions: Iterable[TopicPartition], *, broker_id: int | None
) -> dict[TopicPartition, tuple[Any, ...]]:
    """The active producers of each partition, asked of its leader or of `broker_id`;
    ToolFailed names the first partition error."""
    wanted = sorted(set(partitions))
    cluster = client.metadata(sorted({t for t, _ in wanted}))
    by_node: dict[int, list[TopicPartition]] = {}
    for topic, index in wanted:
        view = cluster.topics.get(topic)
        part = view.partitions.get(index) if view is not None else None
        if part is None:
            raise ToolFailed(error_name(ErrorCode.unknown_topic_or_partition))
        by_node.setdefault(part.leader if broker_id is None else broker_id, []).append(
            (topic, index)
        )
    found: dict[TopicPartition, tuple[Any, ...]] = {}
    for node_id, tps in sorted(by_node.items()):
        node = _node(cluster.brokers, node_id)
        response = client.call(requests.describe_producers(tps), node)
        for topic in response.topics:
            for answer in topic.partitions:
                tp = (str(topic.name), int(answer.partition_index))
                if answer.error_code != ErrorCode.none:
                    raise ToolFailed(error_name(answer.error_code))
                found[tp] = tuple(answer.active_producers)
    return found


def _node(brokers: dict[int, Node], node_id: int) -> Node:
    node = brokers.get(node_id)
    if node is None:
        raise ToolFailed(f"broker {node_id} is not in the cluster")
    return node


def _abort(client: Client, args: argparse.Namespace) -> int:
    tp = (args.topic, args.partition)
    if args.start_offset is None and args.producer_id is None:
        raise ToolFailed(
            "The transaction to abort must be identified either with --start-offset "
            "(for brokers on 3.0 or above) or with --producer-id, --producer-epoch, and "
            "--coordinator-epoch (for older brokers)"
        )
    if args.start_offset is None:
        if args.producer_epoch is None:
            raise ToolFailed("Missing required argument --producer-epoch")
        if args.coordinator_epoch is None:
            raise ToolFailed("Missing required argument --coordinator-epoch")
        producer_id, epoch = args.producer_id, args.producer_epoch
        coordinator_epoch = max(0, args.coordinator_epoch)
    else:
        try:
            producers = describe_producers(client, [tp], broker_id=None)[tp]
        except ToolFailed as exc:
            raise ToolFailed(
                f"Failed to validate producer state for partition {_name(tp)}: {exc}"
            ) from exc
        match = [p for p in producers if p.current_txn_start_offset == args.start_offset]
        if not match:
            raise ToolFailed(
                f"Could not find any open transactions starting at offset "
                f"{args.start_offset} on partition {_name(tp)}"
            )
        found = match[0]
        producer_id, epoch = int(found.producer_id), int(found.producer_epoch)
        # A producer whose transaction hung before any marker has coordinator epoch
        # -1; 0 is at most any coordinator epoch (as Kafka's tool).
        coordinator_epoch = max(0, int(found.coordinator_epoch))
    spec = (
        f"AbortTransactionSpec(topicPartition={_name(tp)}, producerId={producer_id}, "
        f"producerEpoch={epoch}, coordinatorEpoch={coordinator_epoch})"
    )
    cluster = client.metadata([args.topic])
    leader = (
        cluster.topics[args.topic].partitions.get(args.partition)
        if args.topic in cluster.topics
        else None
    )
    if leader is None:
        raise ToolFailed(f"Failed to abort transaction {spec}: UNKNOWN_TOPIC_OR_PARTITION")
    call = requests.write_txn_markers(
        [tp],
        producer_id=producer_id,
        producer_epoch=epoch,
        coordinator_epoch=coordinator_epoch,
        commit=False,
    )
    response = client.call(call, _node(cluster.brokers, leader.leader))
    for marker in response.markers:
        for topic in marker.topics:
            for part in topic.partitions:
                if part.error_code != ErrorCode.none:
                    raise ToolFailed(
                        f"Failed to abort transaction {spec}: {error_name(part.error_code)}"
                    )
    return 0


def _find_hanging(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    if args.topic is None and args.broker_id is None:
        raise ToolFailed(
            "The `find-hanging` command requires either --topic or --broker-id to limit "
            "the scope of the search"
        )
    if args.partition is not None and args.topic is None:
        raise ToolFailed("The --partition argument requires --topic to be provided")
    max_ms = args.max_transaction_timeout * _MS_PER_MIN
    partitions = _partitions_to_search(client, args)
    now_ms = SystemClock().wall_ms()
    candidates = [
        OpenTransaction(tp, p)
        for tp, producers in describe_producers(
            client, partitions, broker_id=args.broker_id
        ).items()
        for p in producers
        if p.current_txn_start_offset != NONE and now_ms - int(p.last_timestamp) > max_ms
    ]
    hanging = _hanging(client, candidates) if candidates else []
    rows = [
        [
            t.partition[0],
            str(t.partition[1]),
            str(t.producer.producer_id),
            str(t.producer.producer_epoch),
            str(t.producer.coordinator_epoch),
            str(t.producer.current_txn_start_offset),
            str(t.producer.last_timestamp),
            str((now_ms - int(t.producer.last_timestamp)) // _MS_PER_MIN),
        ]
        for t in hanging
    ]
    _print(HANGING_HEADERS, rows, out)
    return 0


def _partitions_to_search(client: Client, args: argparse.Namespace) -> list[TopicPartition]:
    if args.topic is not None and args.partition is not None:
        return [(args.topic, args.partition)]
    cluster = client.metadata([args.topic] if args.topic is not None else None)
    found: list[TopicPartition] = []
    for name, view in sorted(cluster.topics.items()):
        if args.topic is None and view.internal:
            continue  # Kafka's tool lists topics without internal ones
        if view.error_code != ErrorCode.none:
            raise ToolFailed(f"Failed to describe 1 topics: {error_name(view.error_code)}")
        found.extend(
            (name, index)
            for index, part in sorted(view.partitions.items())
            if args.broker_id is None or args.broker_id in part.replicas
        )
    return found


def _hanging(client: Client, candidates: list[OpenTransaction]) -> list[OpenTransaction]:
    """The candidates whose marker the coordinator will not write."""
    producer_ids = sorted({int(c.producer.producer_id) for c in candidates})
    ids: dict[int, str] = {}
    for node in client.brokers():
        response = client.call(requests.list_transactions(producer_ids=producer_ids), node)
        if response.error_code != ErrorCode.none:
            failed = error_name(response.error_code)
            raise ToolFailed(
                f"Failed to list transactions for {len(producer_ids)} producers: {failed}"
            )
        for state in response.transaction_states:
            if int(state.producer_id) in producer_ids:
                ids[int(state.producer_id)] = str(state.transactional_id)
    expected: dict[int, set[TopicPartition]] = {}
    for producer_id, tid in ids.items():
        node = client.coordinator(tid, requests.TRANSACTION_KEY_TYPE)
        (state,) = client.call(requests.describe_transactions([tid]), node).transaction_states
        if state.error_code == ErrorCode.none:
            expected[producer_id] = {
                (str(t.topic), int(p)) for t in state.topics for p in t.partitions
            }
        elif state.error_code != ErrorCode.transactional_id_not_found:
            failed = error_name(state.error_code)
            raise ToolFailed(f"Failed to describe {len(ids)} transactions: {failed}")
    return [
        c for c in candidates if c.partition not in expected.get(int(c.producer.producer_id), set())
    ]


def _name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def _print(headers: list[str], rows: list[list[str]], out: IO[str]) -> None:
    for line in format_table(headers, rows):
        print(line, file=out)
