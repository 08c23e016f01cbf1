"""Key-ordered and scheduled delivery in `shoal share-groups --describe` (Shoal's
extensions, which Kafka's tool does not have; nothing here is printed for a group with
neither on, so its output stays Kafka's).

When the group sets `shoal.share.delivery.order=key` or
`shoal.share.delivery.delay.max.ms` > 0 (`DeliverySettings`, read with the paused flag
in one DescribeConfigs), `notes` says so after the group's table, and the offsets view
(the default) adds one row per share-partition the group has state for:

  GROUP TOPIC PARTITION BLOCKED-KEYS HELD-BY-KEY SCHEDULED NEXT-DUE TOP-BLOCKED-KEYS

BLOCKED-KEYS is how many keys have a record held back behind an earlier record of the
key still in flight, HELD-BY-KEY how many AVAILABLE records they hold back,
TOP-BLOCKED-KEYS the keys holding the most (`key:records`, most first), SCHEDULED how
many records wait for their `shoal.deliver.at` time and NEXT-DUE when the first comes
due (UTC). The numbers are the share-partition leader's (`SharePartition.delivery_holds`),
read with ShareGroupBrowse (client/share_browse.py) asking for no entries; so they need
DESCRIBE on the topic too. A share-partition its leader has not loaded shows "-": no
consumer has used it since, so nothing of it is acquired or held in memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import IO

from shoal.cli.kafka_exceptions import message as kafka_message
from shoal.cli.share_group_admin import DeliverySettings, PartitionOffset
from shoal.cli.tables import MISSING, NAME_WIDTH_MIN, key_cell, print_table, time_cell
from shoal.client import Client, KafkaError
from shoal.client.share_browse import BrowsedPartition, browse

HEADERS = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "BLOCKED-KEYS",
    "HELD-BY-KEY",
    "SCHEDULED",
    "NEXT-DUE",
    "TOP-BLOCKED-KEYS",
)
WIDTHS = (NAME_WIDTH_MIN, NAME_WIDTH_MIN, 10)
log = logging.getLogger(__name__)


def extensions_on(settings: DeliverySettings | None) -> bool:
    return settings is not None and (settings.key_order or settings.delay_max_ms > 0)


def notes(group_id: str, settings: DeliverySettings) -> list[str]:
    """One line per delivery extension the group has on (none when neither is)."""
    lines = []
    if settings.key_order:
        lines.append(
            f"Share group '{group_id}' delivers records in key order "
            "(shoal.share.delivery.order=key): a record waits while an earlier record "
            "of its key is in flight."
        )
    if settings.delay_max_ms > 0:
        lines.append(
            f"Share group '{group_id}' delivers records at their shoal.deliver.at time, "
            f"at most {settings.delay_max_ms} ms after their timestamp "
            "(shoal.share.delivery.delay.max.ms)."
        )
    return lines


def holds_rows(group_id: str, browsed: Sequence[BrowsedPartition]) -> list[tuple[str, ...]]:
    """The table's rows, one per browsed share-partition, in the order given."""
    rows: list[tuple[str, ...]] = []
    for b in browsed:
        if not b.loaded:
            rows.append((group_id, b.topic, str(b.partition), *(MISSING,) * 5))
            continue
        h = b.holds
        top = ",".join(f"{key_cell(key)}:{held}" for key, held in h.top_blocked_keys)
        rows.append(
            (
                group_id,
                b.topic,
                str(b.partition),
                str(h.blocked_keys),
                str(h.blocked_records),
                str(h.scheduled_records),
                time_cell(h.next_due_ms),
                top or MISSING,
            )
        )
    return rows


def print_holds(
    client: Client, group_id: str, offsets: Sequence[PartitionOffset], out: IO[str]
) -> None:
    """The table for the share-partitions of `offsets`, browsed a topic at a time; a
    topic whose browse fails (no DESCRIBE on it, say) gets a line saying why."""
    by_topic: dict[str, list[int]] = {}
    for o in offsets:
        by_topic.setdefault(o.topic, []).append(o.partition)
    browsed: list[BrowsedPartition] = []
    failed: list[str] = []
    for topic, partitions in sorted(by_topic.items()):
        try:
            browsed += browse(client, group_id, topic, sorted(partitions), max_entries=0)
        except KafkaError as exc:
            log.info("delivery holds of %s in share group '%s' not read: %s", topic, group_id, exc)
            failed.append(f"Delivery holds of topic '{topic}' not shown: {kafka_message(exc)}")
    if browsed:
        print_table(out, HEADERS, holds_rows(group_id, browsed), WIDTHS)
    for line in failed:
        print(f"\n{line}", file=out)
