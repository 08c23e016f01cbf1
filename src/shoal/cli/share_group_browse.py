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
  REDELIVERY-IN-MS KEY-BLOCKED DELIVER-AT

STATE is the broker's name of the state (so states a broker adds print as they are),
HOLDER the member id holding the acquisition lock ("-" when none) and
LOCK-EXPIRES-MS the time left on that lock; REDELIVERY-IN-MS is the time left before
an AVAILABLE record held back by the group's delayed redelivery
(`shoal.share.redelivery.backoff.ms`) may be delivered again ("-" when it is not held
back). KEY-BLOCKED is "yes" for an AVAILABLE record held back because an earlier record
of its key is still in flight (`shoal.share.delivery.order=key`), DELIVER-AT the UTC
time a record waiting for its `shoal.deliver.at` header comes due
(`shoal.share.delivery.delay.max.ms` > 0); "-" otherwise. Under the table, per
partition: its start and end offsets, "(more entries not shown: raise --max)" when the broker
had more than --max (default `limits.SHARE_BROWSE_ENTRIES_DEFAULT`, capped by the
broker's `shoal.share.browse.max.entries`), or that the share-partition is not in its
leader's memory (no consumer of the group has used it since it was loaded; nothing
of it is acquired), then, when key order or scheduled delivery holds records back,
a line saying how many keys hold how many records back (with the keys holding the
most), how many records wait for their time and when the first comes due, and how
many malformed `shoal.deliver.at` headers were delivered at once.
"""

from __future__ import annotations

import argparse
from typing import IO

from shoal.cli.kafka_options import ToolFailed
from shoal.cli.share_group_admin import describe_group
from shoal.cli.tables import MISSING, NAME_WIDTH_MIN, cell, format_table, key_cell, time_cell
from shoal.client import Client, KafkaError
from shoal.client.errors import ErrorCode
from shoal.client.share_browse import BrowsedHolds, BrowsedPartition, browse

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
    "KEY-BLOCKED",
    "DELIVER-AT",
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
            "yes" if e.key_blocked else MISSING,
            time_cell(e.deliver_at_ms),
        )
        for b in browsed
        for e in b.entries
    ]
    for line in format_table(HEADERS, rows, min_widths=(NAME_WIDTH_MIN,)):
        print(line, file=out)
    print(file=out)
    for b in browsed:
        print(summary(b), file=out)
        held = holds_summary(b.holds)
        if held:
            print(f"{b.topic}-{b.partition}: {held}", file=out)
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


def holds_summary(holds: BrowsedHolds) -> str:
    """What key order and scheduled delivery hold back, in words ("" when nothing):
    `3 keys hold back 12 records (top: k1 5, k2 4, k3 3); 40 records wait for their
    time, next due 2026-11-29T10:00:00.000Z; 2 malformed shoal.deliver.at delivered
    at once`."""
    parts = []
    if holds.blocked_records:
        top = ", ".join(f"{key_cell(key)} {held}" for key, held in holds.top_blocked_keys)
        verb = "holds" if holds.blocked_keys == 1 else "hold"
        parts.append(
            f"{_count(holds.blocked_keys, 'key')} {verb} back "
            f"{_count(holds.blocked_records, 'record')}" + (f" (top: {top})" if top else "")
        )
    if holds.scheduled_records:
        waits = "waits for its" if holds.scheduled_records == 1 else "wait for their"
        parts.append(
            f"{_count(holds.scheduled_records, 'record')} {waits} time, "
            f"next due {time_cell(holds.next_due_ms)}"
        )
    if holds.malformed_deliver_at:
        parts.append(f"{holds.malformed_deliver_at} malformed shoal.deliver.at delivered at once")
    return "; ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
