"""Given delivery holds for rendering tests: what key-ordered and scheduled delivery
hold back, as `SharePartition.delivery_holds` and `snapshot` would report it, put in
place of the core's answers so that the browse handler, the web console and the
metrics can be tested on values the test chooses (the core's own answers are tested
with the core, and end to end on a real broker).

`give_holds` makes every share-partition's `delivery_holds` return `holds`;
`mark_entries` passes every snapshot's entries through `rewrite` (to split an entry and
set `key_blocked` / `deliver_at_ms`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from shoal.share.holding import DeliveryHolds
from shoal.share.partition import InFlightSnapshot, RecordView, SharePartition

DUE_MS = 1_700_000_090_000
"""A due time 90 s past the manual clock's wall start (`ManualClock`'s default offset)."""

HOLDS = DeliveryHolds(
    blocked_keys=2,
    blocked_records=7,
    top_blocked_keys=((b"k1", 5), (b"\xff", 2)),
    scheduled_records=3,
    next_due_ms=DUE_MS,
    malformed_deliver_at=1,
)


def give_holds(monkeypatch: pytest.MonkeyPatch, holds: DeliveryHolds = HOLDS) -> None:
    monkeypatch.setattr(SharePartition, "delivery_holds", lambda _sp, *, top=5: holds)


def mark_entries(
    monkeypatch: pytest.MonkeyPatch,
    rewrite: Callable[[tuple[RecordView, ...]], tuple[RecordView, ...]],
) -> None:
    snapshot = SharePartition.snapshot

    def marked(sp: SharePartition, *, max_entries: int) -> InFlightSnapshot:
        snap = snapshot(sp, max_entries=max_entries)
        return dataclasses.replace(snap, entries=rewrite(snap.entries))

    monkeypatch.setattr(SharePartition, "snapshot", marked)


def split_blocked_and_due(entries: tuple[RecordView, ...]) -> tuple[RecordView, ...]:
    """ShareRig's one entry (10-14) as 10-12 held back by key and 13-14 due at DUE_MS."""
    (entry,) = entries
    return (
        dataclasses.replace(entry, last_offset=12, key_blocked=True),
        dataclasses.replace(entry, first_offset=13, deliver_at_ms=DUE_MS),
    )
