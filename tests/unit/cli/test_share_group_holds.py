"""Key-ordered and scheduled delivery in `shoal share-groups --describe`
(cli/share_group_holds.py): the notes naming the extensions a group has on (none for
a group with neither, whose output stays Kafka's) and the per-share-partition table
built from browsed partitions. No broker involved: the holds are values the test
gives (the e2e tests read a real broker's)."""

from __future__ import annotations

import io

from shoal.cli.share_group_admin import DeliverySettings
from shoal.cli.share_group_holds import HEADERS, WIDTHS, extensions_on, holds_rows, notes
from shoal.cli.tables import print_table
from shoal.client.share_browse import BrowsedHolds, BrowsedPartition
from tests.support.cli import rows


def _browsed(partition: int, holds: BrowsedHolds | None) -> BrowsedPartition:
    return BrowsedPartition(
        topic="orders",
        partition=partition,
        loaded=holds is not None,
        start_offset=0 if holds is not None else None,
        end_offset=9 if holds is not None else None,
        truncated=holds is not None,
        entries=(),
        holds=holds or BrowsedHolds(),
    )


def test_notes_name_the_extensions_the_group_has_on() -> None:
    assert not extensions_on(None)
    assert not extensions_on(DeliverySettings(paused=True))
    assert notes("g", DeliverySettings()) == []
    assert extensions_on(DeliverySettings(key_order=True))
    assert extensions_on(DeliverySettings(delay_max_ms=1))
    (key,) = notes("g", DeliverySettings(key_order=True))
    assert key.startswith("Share group 'g' delivers records in key order")
    assert "shoal.share.delivery.order=key" in key
    (scheduled,) = notes("g", DeliverySettings(delay_max_ms=60_000))
    assert scheduled == (
        "Share group 'g' delivers records at their shoal.deliver.at time, at most "
        "60000 ms after their timestamp (shoal.share.delivery.delay.max.ms)."
    )
    both = notes("g", DeliverySettings(key_order=True, delay_max_ms=5))
    assert both == [key, scheduled.replace("60000 ms", "5 ms")]


def test_the_table_has_a_row_per_share_partition_with_its_holds() -> None:
    browsed = [
        _browsed(
            0,
            BrowsedHolds(
                blocked_keys=2,
                blocked_records=7,
                top_blocked_keys=((b"k1", 5), (b"k2", 2)),
                scheduled_records=3,
                next_due_ms=1_764_400_000_000,
            ),
        ),
        _browsed(1, BrowsedHolds()),
        _browsed(2, None),  # not in its leader's memory
    ]
    out = io.StringIO()
    print_table(out, HEADERS, holds_rows("g", browsed), WIDTHS)
    table = rows(out.getvalue())
    assert [tuple(r.values()) for r in table] == [
        ("g", "orders", "0", "2", "7", "3", "2025-11-29T07:06:40.000Z", "k1:5,k2:2"),
        ("g", "orders", "1", "0", "0", "0", "-", "-"),
        ("g", "orders", "2", "-", "-", "-", "-", "-"),
    ]
    assert list(table[0]) == list(HEADERS)
