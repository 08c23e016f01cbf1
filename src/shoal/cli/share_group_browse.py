"""`shoal share-groups --browse --group G --topic T [--partition P] [--max N]`: the
records of each share-partition's in-flight window, read from its leader's memory
without acquiring anything (ShareGroupBrowse, Shoal's extension API;
client/share_browse.py). Needs DESCRIBE on the group and the topic.

The topic and partition must exist (Metadata) and so must the group
(ShareGroupDescribe: an unknown group fails as --describe says it); without
--partition every partition of the topic is browsed.
One row per in-flight entry (a whole batch, or one offset of a split batch), from the
share-partition start offset on:

  TOPIC PARTITION FIRST-OFFSET LAST-OFFSET STATE DELIVERY-COUNT HOLDER LOCK-EXPIRES-MS
  REDELIVERY-IN-MS

STATE is the broker's name of the state (so states a broker adds print as they are),
HOLDER the member id holding the acquisition lock ("-" when none) and
LOCK-EXPIRES-MS the time left on that lock; REDELIVERY-IN-MS is the time left before
an AVAILABLE record held back by the group's delayed redelivery
(`shoal.share.redelivery.backoff.ms`) may be delivered again ("-" when it is not held
back). Under the table, per partition: its
start and end offsets, "(more entries not shown: raise --max)" when the broker
had more than --max (default `limits.SHARE_BROWSE_ENTRIES_DEFAULT`, capped by the
broker's `shoal.share.browse.max.entries`), or that the share-partition is not in its
leader's memory (no consumer of the group has used it since it was loaded; nothing
of it is acquired).
"""

from __future__ import annotations

import argparse
from typing import IO

from shoal.cli.kafka_options import ToolFailed
from shoal.cli.share_group_admin import describe_group
from shoal.cli.tables import MISSING, NAME_WIDTH_MIN, cell, format_table
from shoal.client import Client, KafkaError
from shoal.client.errors import ErrorCode
from shoal.client.share_browse import BrowsedPartition, browse

HEADERS = (
    "TOPIC",
    "PARTITION",
    "FIRST-OFFSET",
    "LAST-OFFSET",
    "STATE",
    "DELIVERY-COUNT",
    "HOLDER",
    "LOCK-EXPIRES-MS",
    "REDELIVERY-IN-MS",
)


def run_browse(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    group_id = args.group[0]
    (topic,) = args.topic
    partitions = _partitions(client, topic, args.partition)
    try:
        describe_group(client, group_id)
    except KafkaError as exc:
        if exc.code == ErrorCode.group_id_not_found:
            raise ToolFailed(f"Share group '{group_id}' does not exist.") from exc
        raise
    browsed = browse(client, group_id, topic, partitions, max_entries=args.max)
    rows = [
        (
            b.topic,
            str(b.partition),
            str(e.first_offset),
            str(e.last_offset),
            e.state,
            str(e.delivery_count),
            e.holder or MISSING,
            cell(e.lock_expires_in_ms),
            cell(e.redelivery_due_in_ms),
        )
        for b in browsed
        for e in b.entries
    ]
    for line in format_table(HEADERS, rows, min_widths=(NAME_WIDTH_MIN,)):
        print(line, file=out)
    print(file=out)
    for b in browsed:
        print(summary(b), file=out)
    return 0


def _partitions(client: Client, topic: str, partition: int | None) -> list[int]:
    cluster = client.metadata([topic])
    view = cluster.topics.get(topic)
    if view is None or view.error_code != ErrorCode.none:
        code = ErrorCode.unknown_topic_or_partition if view is None else view.error_code
        raise KafkaError(code, None, context=f"topic '{topic}'")
    if partition is None:
        return sorted(view.partitions)
    if partition not in view.partitions:
        raise ToolFailed(f"Topic '{topic}' has no partition {partition}.")
    return [partition]


def summary(b: BrowsedPartition) -> str:
    name = f"{b.topic}-{b.partition}"
    if not b.loaded:
        return f"{name}: not in the leader's memory (nothing acquired)"
    more = " (more entries not shown: raise --max)" if b.truncated else ""
    return f"{name}: start offset {b.start_offset}, end offset {b.end_offset}{more}"
