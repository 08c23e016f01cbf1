"""What a share-partition holds back under Shoal's two acquisition extensions, per
operation: per-key order (`shoal.share.delivery.order=key`, share/key_order.py) and
scheduled delivery (`shoal.deliver.at` under `shoal.share.delivery.delay.max.ms`,
share/schedule.py). `SharePartition` calls these; the walk itself is
share/acquire.py's.

Owns:
- `read_holds`: the `Holds` of one acquisition: the read's keys and due times, decoded
  only for the batches with something not yet known (keys not learned; records new to
  the window), and the keys the walk must not hand out.
- `next_ready_offset`: where a ShareFetch's next read of the partition starts, inside
  the window (docs/design/scheduled-delivery.md, "Gathering due records").
- `DeliveryHolds` and `delivery_holds`: the view for describe, the console and the
  metrics.

Deterministic: times come from the caller's clock.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from shoal.clock import Clock
from shoal.protocol.record_batch import BatchError, BatchHeader
from shoal.protocol.records import RecordFacts, record_facts
from shoal.share.acquire import Holds
from shoal.share.key_order import RecordKeys, held_back, holding_keys
from shoal.share.leader_settings import SharePartitionConfig
from shoal.share.persister import SharePartitionKey
from shoal.share.window import InFlightWindow

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DeliveryHolds:
    """The records a share-partition holds back by key order or by schedule (Shoal
    extensions), for describe, the web console and the metrics."""

    blocked_keys: int = 0
    """Distinct keys with a record held back because an earlier record of the key is
    in flight (`shoal.share.delivery.order=key`)."""
    blocked_records: int = 0
    """AVAILABLE records held back by their key."""
    top_blocked_keys: tuple[tuple[bytes, int], ...] = ()
    """The keys holding back the most records: (key, records held), most first."""
    scheduled_records: int = 0
    """Records waiting for their `shoal.deliver.at` time."""
    next_due_ms: int | None = None
    """The earliest of those times (epoch milliseconds), None when none wait."""
    malformed_deliver_at: int = 0
    """Records delivered at once because their `shoal.deliver.at` did not parse, since
    the share-partition was loaded."""


def read_holds(
    window: InFlightWindow,
    usable: Sequence[BatchHeader],
    records: bytes | memoryview,
    *,
    walk_from: int,
    settings: SharePartitionConfig,
    clock: Clock,
    bounds: tuple[int, int, int],
    where: SharePartitionKey,
) -> Holds:
    """What the acquisition walking the read `usable` (in `records`) from `walk_from`
    holds back. `bounds`: the share-partition's (key_scan_max, scheduled_max,
    window_span_max). Only the batches with something not yet known are decoded."""
    key_scan_max, scheduled_max, window_span_max = bounds
    ordered = settings.key_ordered
    scheduled = settings.delivery_delay_max_ms > 0
    keys = window.keys
    if ordered and keys is None:
        keys = window.keys = RecordKeys(window.start_offset)
    new_from = window.new_records_from()
    gap = window.gap_start
    if gap is not None:
        new_from = min(new_from, gap)
    first_unknown = len(usable)
    for index, header in enumerate(usable):
        if (scheduled and header.last_offset >= new_from) or (
            keys is not None and ordered and not keys.knows(header.base_offset, header.last_offset)
        ):
            first_unknown = index
            break
    facts = RecordFacts(usable[-1].last_offset + 1, usable[-1].last_offset, None, {}, [])
    learned: list[tuple[int, Sequence[bytes | None]]] = []
    if first_unknown < len(usable):
        assert records, "a key-ordered or scheduled acquisition needs the read's records"
        facts = RecordFacts(usable[first_unknown].base_offset, usable[-1].last_offset, None, {}, [])
        for header in usable[first_unknown:]:  # one batch at a time: holes take no room
            found = _facts_of(records, header, ordered=ordered, scheduled=scheduled, where=where)
            if found.keys is not None:
                learned.append((found.first_offset, found.keys))
            facts.deliver_at.update(found.deliver_at)
            facts.malformed.extend(found.malformed)
    holds = Holds(
        facts,
        max_delay_ms=settings.delivery_delay_max_ms,
        now_wall_ms=clock.wall_ms(),
        now_mono_ms=clock.monotonic_ms(),
        scheduled_max=scheduled_max,
        span_last=window.start_offset + window_span_max - 1,
    )
    if ordered and keys is not None:
        keys.learn(learned, high=usable[-1].last_offset)
        holds.keys = keys
        holds.held = holding_keys(window, keys, upto=walk_from)
        holds.scan_max = key_scan_max
    return holds


def _facts_of(
    records: bytes | memoryview,
    header: BatchHeader,
    *,
    ordered: bool,
    scheduled: bool,
    where: SharePartitionKey,
) -> RecordFacts:
    """The keys and due times of one log batch; a batch that does not decode (the
    log's own batches were validated when produced) is delivered unordered and
    unscheduled, and logged."""
    try:
        return record_facts(records, (header,), keys=ordered, deliver_at=scheduled)
    except BatchError as exc:
        log.warning(
            "share-partition %s: records of the batch at %d not read (%s); delivered "
            "unordered and unscheduled",
            where,
            header.base_offset,
            exc,
        )
        count = header.last_offset - header.base_offset + 1
        return RecordFacts(header.base_offset, header.last_offset, [None] * count, {}, [])


def next_ready_offset(
    window: InFlightWindow,
    after: int,
    *,
    key_ordered: bool,
    scheduled: bool,
    scan_max: int,
) -> int | None:
    """The next record of the window at or past `after` that may be taken now: one that
    came due (they lie scattered among waiting and done ones), or under key order one
    whose key is not in flight (a held-back record whose key cleared); at most
    `scan_max` entries are looked at. None if none, or neither extension is on."""
    if not (key_ordered or scheduled) or after > window.end_offset:
        return None
    keys = window.keys if key_ordered else None
    in_flight = keys.in_flight if keys is not None else None
    cache = window.cache
    ready = window.is_ready
    first = cache.index_from(after)
    for index in range(first, min(len(cache), first + scan_max)):
        batch = cache[index]
        whole = batch.whole
        if whole is not None:
            if ready(whole):
                offset = max(after, batch.first_offset)
                if in_flight is None or keys is None or keys.get(offset) not in in_flight:
                    return offset
            continue
        assert batch.offsets is not None
        base = batch.first_offset
        for position in range(max(0, after - base), batch.size):
            if ready(batch.offsets[position]):
                offset = base + position
                if in_flight is None or keys is None or keys.get(offset) not in in_flight:
                    return offset
    return None


def delivery_holds(
    window: InFlightWindow, *, key_ordered: bool, now_wall_ms: int, top: int
) -> DeliveryHolds:
    """What the window holds back now (the records whose time came leave the waiting
    list first). O(window)."""
    schedule = window.schedule
    if schedule.waiting_at:
        schedule.prune(now_wall_ms, window.start_offset)
    counts: dict[bytes, int] = {}
    if key_ordered and window.keys is not None:
        counts, _ = held_back(window, window.keys)
    most = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]
    return DeliveryHolds(
        blocked_keys=len(counts),
        blocked_records=sum(counts.values()),
        top_blocked_keys=tuple(most),
        scheduled_records=len(schedule),
        next_due_ms=schedule.next_due_ms(),
        malformed_deliver_at=schedule.malformed,
    )
