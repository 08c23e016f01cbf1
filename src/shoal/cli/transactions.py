"""`shoal transactions`: list and describe transactions, as Kafka's
kafka-transactions.sh does (sub-commands, columns):

  list [--state S ...] [--producer-id N ...]
      TransactionalId Coordinator ProducerId TransactionState
  describe --transactional-id ID
      CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState
      TransactionTimeoutMs CurrentTransactionStartTimeMs TransactionDurationMs TopicPartitions

`list` asks every broker; `describe` asks the id's coordinator (FindCoordinator key
type 1). Start time and duration read "None" when no transaction is ongoing.
describe-producers, abort and find-hanging: see transactions_producers.py.
Exit status: 0 done, 1 failed (message on stderr), 2 bad command line.
"""

from __future__ import annotations

import argparse
from typing import IO, Any

from shoal.cli import transactions_producers
from shoal.cli.kafka_options import ToolFailed, add_tool_parser, check_bootstrap, run_tool
from shoal.cli.tables import format_table
from shoal.client import Client, requests
from shoal.client.errors import ErrorCode, error_name
from shoal.clock import SystemClock

_ONGOING = "Ongoing"


def add_parser(commands: Any) -> None:
    parser = add_tool_parser(
        commands,
        "transactions",
        help_text="list, describe and abort transactions (kafka-transactions.sh)",
        description=__doc__ or "",
    )
    parser.add_argument("--timeout", type=int, metavar="MS", help="admin call timeout (ms)")
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = sub.add_parser("list", help="list transactions")
    listing.add_argument("--state", action="append", default=[], metavar="STATE")
    listing.add_argument("--producer-id", action="append", type=int, default=[], metavar="ID")
    describing = sub.add_parser("describe", help="describe one transactional id")
    describing.add_argument("--transactional-id", required=True, metavar="ID")
    transactions_producers.add_subparsers(sub)
    parser.set_defaults(
        run=lambda args: run_tool(
            parser,
            args,
            validate=check_bootstrap,
            api_timeout_ms=lambda a: a.timeout,
            action=_act,
            error_prefix="",  # kafka-transactions.sh prints its messages bare
        )
    )


def _act(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    if args.action == "list":
        return _list(client, args, out)
    if args.action != "describe":
        return transactions_producers.act(client, args, out)
    return _describe(client, args.transactional_id, out)


def _list(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    call = requests.list_transactions(states=args.state, producer_ids=args.producer_id)
    rows: list[list[str]] = []
    for node in client.brokers():
        response = client.call(call, node)
        if response.error_code != ErrorCode.none:
            failed = error_name(response.error_code)
            raise ToolFailed(f"listing transactions on {node.address}: {failed}")
        rows.extend(
            [str(s.transactional_id), str(node.node_id), str(s.producer_id), s.transaction_state]
            for s in response.transaction_states
        )
    headers = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    for line in format_table(headers, sorted(rows)):
        print(line, file=out)
    return 0


def _describe(client: Client, transactional_id: str, out: IO[str]) -> int:
    node = client.coordinator(transactional_id, requests.TRANSACTION_KEY_TYPE)
    response = client.call(requests.describe_transactions([transactional_id]), node)
    (state,) = response.transaction_states
    if state.error_code != ErrorCode.none:
        raise ToolFailed(f"transactional id {transactional_id!r}: {error_name(state.error_code)}")
    ongoing = state.transaction_state == _ONGOING
    start_ms = int(state.transaction_start_time.timestamp() * 1000)
    partitions = ",".join(f"{t.topic}-{p}" for t in state.topics for p in t.partitions)
    headers = [
        "CoordinatorId",
        "TransactionalId",
        "ProducerId",
        "ProducerEpoch",
        "TransactionState",
        "TransactionTimeoutMs",
        "CurrentTransactionStartTimeMs",
        "TransactionDurationMs",
        "TopicPartitions",
    ]
    row = [
        str(node.node_id),
        transactional_id,
        str(state.producer_id),
        str(state.producer_epoch),
        state.transaction_state,
        str(int(state.transaction_timeout.total_seconds() * 1000)),
        str(start_ms) if ongoing else "None",
        str(SystemClock().wall_ms() - start_ms) if ongoing else "None",
        partitions,
    ]
    for line in format_table(headers, [row]):
        print(line, file=out)
    return 0
