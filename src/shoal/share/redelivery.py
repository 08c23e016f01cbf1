"""Delayed redelivery (a Shoal extension, off by default): when a record may be
acquired again after a RELEASE or an acquisition-lock expiry.

Owns `Redelivery`, one per share-partition window. With the group's
`shoal.share.redelivery.backoff.ms` above 0, a record (a whole batch, or one offset
of a split batch: the delay lives on its `InFlightState`, so work stays per batch)
that a RELEASE or a lock expiry makes AVAILABLE gets a not-before time
`now + backoff * multiplier^(delivery count - 1)` (capped at the maximum,
`SharePartitionConfig.redelivery_delay_ms`). Until then acquisition passes over it,
but it stays AVAILABLE in the window: the start offset cannot move past it, it
counts towards the in-flight limit, and it is taken, in offset order, by the first
acquisition at or after its time. A record made AVAILABLE by a closed share session
(SESSION_RELEASE), a new record and a record loaded from persisted state have no
delay (not-before 0).

Wake-ups: every not-before time set is also pushed on a heap; `next_due_ms` is its
earliest, and `pop_due(now)` drops the times reached and says whether any was, so
the shell wakes the fetches parked on the share-partition then (an effect, like
lock expiry). Entries whose record was archived or reloaded meanwhile only cause a
spurious wake. The heap holds at most one entry per release or expiry not yet due.

Restart: the delay is kept in memory only (Kafka's share-group state records have no
field for it). A record still waiting when the broker restarts, or when its
share-partition is dropped (deleted topic, reset state, the group's last session
ended), is loaded AVAILABLE without a delay and is delivered at once, with its
delivery count (persisted) intact. Idle unloading keeps a share-partition with a
delay pending loaded.

Deterministic: time comes from the injected `now_ms` (the share-partition's clock).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Final

from shoal.share.states import Event

DELAYED_EVENTS: Final = frozenset({Event.RELEASE, Event.LOCK_EXPIRED})
"""Events after which an AVAILABLE record waits for its backoff."""


class Redelivery:
    """Not-before times of the records of one window waiting to be redelivered."""

    __slots__ = ("_delay_ms", "_due", "_now_ms")

    def __init__(
        self,
        *,
        now_ms: Callable[[], int] = lambda: 0,
        delay_ms: Callable[[int], int] = lambda _count: 0,
    ) -> None:
        self._now_ms = now_ms
        self._delay_ms = delay_ms
        """Delivery count -> delay (the group's backoff, read at each use)."""
        self._due: list[int] = []

    def not_before(self, event: Event, delivery_count: int) -> int:
        """The not-before time of a record `event` just made AVAILABLE after
        `delivery_count` deliveries: 0 = at once. A delay is scheduled for waking."""
        if event not in DELAYED_EVENTS:
            return 0
        delay = self._delay_ms(delivery_count)
        if delay <= 0:
            return 0
        at = self._now_ms() + delay
        if not self._due or self._due[0] != at:
            heapq.heappush(self._due, at)
        return at

    def hold_until(self, at_ms: int) -> None:
        """A record waits until `at_ms` (monotonic) for another reason (a scheduled
        delivery time, share/schedule.py): wake the parked fetches then too."""
        heapq.heappush(self._due, at_ms)

    def is_due(self, not_before_ms: int) -> bool:
        return not_before_ms == 0 or not_before_ms <= self._now_ms()

    def next_due_ms(self) -> int | None:
        """When the next delayed record becomes acquirable, or None."""
        return self._due[0] if self._due else None

    def pop_due(self, now_ms: int) -> bool:
        """Forget the times <= now_ms; whether there were any (parked fetches to wake)."""
        due = self._due
        found = False
        while due and due[0] <= now_ms:
            heapq.heappop(due)
            found = True
        return found

    @property
    def pending(self) -> int:
        """Delays not yet reached (some may belong to records gone since)."""
        return len(self._due)
