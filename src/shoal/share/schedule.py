"""Scheduled delivery (a Shoal extension): the records of a share-partition's window
that wait for their `shoal.deliver.at` time.

With the group's `shoal.share.delivery.delay.max.ms` above 0, a record whose header
`shoal.deliver.at` holds an epoch time in milliseconds is due at
min(that time, the record's timestamp + delay.max.ms) (`due_ms`); acquisition takes a
new record that is not yet due into the window AVAILABLE, with the monotonic time of
its due time as its not-before time (the field delayed redelivery uses, so the same
wake-ups apply), and remembers it here. Only the first delivery waits: a record
released later is redelivered like any other.

Owns `Schedule`: the waiting records (offset -> due time, epoch ms) and a heap of their
due times, so that the records come off the list when their time is reached (`prune`)
and `waiting` counts those still to come. Waiting records hold no lock and do not count
towards `share.partition.max.record.locks`; at most `limits.SHARE_SCHEDULED_RECORDS_MAX`
wait in one share-partition (acquisition takes no new record from the log beyond
that). Nothing is persisted: after a restart the records are read again and their
header gives the same due time (docs/design/scheduled-delivery.md).

Deterministic: times come from the caller.
"""

from __future__ import annotations

import heapq


def due_ms(deliver_at_ms: int, timestamp_ms: int, *, max_delay_ms: int) -> int:
    """When a record with `shoal.deliver.at` = `deliver_at_ms` and timestamp
    `timestamp_ms` may be handed out: its time, at most `max_delay_ms` after its
    timestamp."""
    return min(deliver_at_ms, timestamp_ms + max_delay_ms)


class Schedule:
    """The records of one window waiting for their time."""

    __slots__ = ("_heap", "_offsets", "malformed", "waiting_at")

    def __init__(self) -> None:
        self.waiting_at: dict[int, int] = {}
        """Offset -> due time (epoch ms) of each record waiting."""
        self._heap: list[tuple[int, int]] = []
        self._offsets: list[int] = []
        """The waiting offsets as a heap: those the start offset passes (archived when
        the log start moved) leave the list however far their time is."""
        self.malformed = 0
        """Records taken at once because their header did not parse (since loading)."""

    def __len__(self) -> int:
        return len(self.waiting_at)

    def wait(self, offset: int, due_at_ms: int) -> None:
        self.waiting_at[offset] = due_at_ms
        heapq.heappush(self._heap, (due_at_ms, offset))
        heapq.heappush(self._offsets, offset)

    def taken(self, offset: int) -> None:
        """The record at `offset` left the list before its time (acquired: it was
        due; archived)."""
        self.waiting_at.pop(offset, None)

    def prune(self, now_wall_ms: int, start_offset: int) -> None:
        """Forget the records whose time has come, and those below the start offset."""
        heap = self._heap
        waiting = self.waiting_at
        while heap and heap[0][0] <= now_wall_ms:
            due, offset = heapq.heappop(heap)
            if waiting.get(offset) == due:
                del waiting[offset]
        offsets = self._offsets
        while offsets and offsets[0] < start_offset:
            waiting.pop(heapq.heappop(offsets), None)
        if len(heap) > 64 and len(heap) > 4 * len(waiting):
            self._heap = [(due, offset) for offset, due in waiting.items()]
            heapq.heapify(self._heap)
        if len(offsets) > 64 and len(offsets) > 4 * len(waiting):
            self._offsets = list(waiting)
            heapq.heapify(self._offsets)

    def next_due_ms(self) -> int | None:
        """The earliest due time still waiting (epoch ms), None when none wait."""
        heap = self._heap
        waiting = self.waiting_at
        while heap and waiting.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None
