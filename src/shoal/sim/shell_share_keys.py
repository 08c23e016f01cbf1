"""Per-key order as share members see it: the bookkeeping behind the key-order checks
of the extended share scenario (sim/shell_share_ext.py). Pure: every method is told
the simulated time (ms) of its event.

The semantics are those of `shoal.share.delivery.order=key` (docs/design/simulation.md,
"Key order and scheduled delivery"). The broker's states are not read; what the
clients saw is enough, judged conservatively: a check fails only when the broker
surely broke the rule, whatever the moments its own steps took inside the windows
the clients saw (a request's send and its answer).

(I1) No two acquisitions hold records of one key at once. A record is *surely held*
from the answer that acquired it until the first event after which it may not be:
the acknowledgement of it going out, its lock's earliest expiry (the acquiring
ShareFetch's send + the lock duration), its member's earliest session expiry (its
last answered heartbeat's send + the session timeout), its member's session possibly
ending (a request unanswered, a refused session, a fence, a leave), or any broker
crash, clean shutdown or dropped connection. An acquisition that hands out a record
of a key some other acquisition surely holds breaks I1.

(I2) A record of a key is not handed out while an earlier record of the key is
surely not ACKNOWLEDGED/ARCHIVED and not in the same acquisition. An earlier record
is surely unsettled when it is known to be in the log (its produce was acknowledged
at its offset, or a fetched batch held it), no ACCEPT or REJECT of it went out since
its last delivery, and it cannot have reached the delivery limit (archived): its
last seen delivery count plus every ShareFetch of its partition that could have
acquired it unseen (unanswered, or still in flight) stays below the limit.

After a power loss that took bytes (page cache) a log may have lost records its share
state kept (acknowledged, or delivered some times), and later hold other records at
those offsets, which the share state then speaks for: what is known is forgotten, and
a partition's offsets are trusted again only above the highest the broker may have
held before (the highest known, plus every record of an unanswered produce).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from shoal.protocol.share import AcknowledgeType

SETTLING = (int(AcknowledgeType.ACCEPT), int(AcknowledgeType.REJECT))


@dataclass(slots=True)
class _Held:
    """A record surely held by `member`'s acquisition `acquisition` (module docstring)."""

    member: str
    acquisition: int
    offset: int
    sent_ms: int
    """The acquiring ShareFetch went out then: the lock ends no sooner than this plus
    the lock duration."""


@dataclass(slots=True)
class _Known:
    """A record known to be at its offset."""

    value: int
    key: bytes | None
    since_ms: float
    """Send time of its last seen delivery, or of its produce; -inf if neither is
    known (any unseen acquisition counts)."""
    count: int = 0
    """Delivery count of its last seen delivery."""
    settling: bool = False
    """An ACCEPT or REJECT of it went out since its last delivery (it may be settled)."""
    acks_open_until: float = 0.0
    """A settling acknowledgement sent may still apply until then (inf: unanswered)."""


@dataclass(slots=True)
class _Fetch:
    """A member's ShareFetch, from its send until its answer or failure."""

    partitions: list[int]
    sent_ms: int
    max_wait_ms: int
    dead_ms: float = math.inf
    """The broker died then (or was down when it went out): it acquires nothing after."""


@dataclass(slots=True)
class KeyOrderBook:
    """What the members were told about keys, and the I1/I2 checks (module docstring).
    `answered` gives the violations of one ShareFetch answer, as (rule, detail)."""

    key_of: Mapping[int, bytes | None]
    """Value -> the key its producer gave it."""
    lock_ms: int
    session_timeout_ms: int
    delivery_limit: int
    unseen_slack_ms: int
    """How long after its answer was given up (or its wait ended) an unanswered
    ShareFetch may still acquire."""
    known: dict[int, dict[int, _Known]] = field(default_factory=dict)
    holds: dict[tuple[int, bytes], list[_Held]] = field(default_factory=dict)
    in_flight: dict[str, _Fetch] = field(default_factory=dict)
    unseen: dict[int, list[float]] = field(default_factory=dict)
    """Partition -> until when each unanswered ShareFetch may have acquired."""
    heartbeat_ms: dict[str, int] = field(default_factory=dict)
    trusted_from: dict[int, int] = field(default_factory=dict)
    """Partition -> the lowest offset whose record is known for sure (`lossy`)."""
    highest: dict[int, int] = field(default_factory=dict)
    """Partition -> the highest offset known to have held a record."""
    unanswered: dict[int, int] = field(default_factory=dict)
    """Partition -> records of unanswered produces (the log may have held them too)."""
    turbulent: bool = False
    """A clean shutdown is under way: no hold is sure."""
    acquisitions: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    """How often the checks had something to see (figures of a run)."""

    # ---- what the producer and the members were told

    def produced(self, partition: int, base_offset: int, values: list[int], sent_ms: int) -> None:
        self._saw(partition, base_offset + len(values) - 1)
        known = self.known.setdefault(partition, {})
        for index, value in enumerate(values):
            offset = base_offset + index
            entry = known.get(offset)
            if entry is None or entry.value != value:
                known[offset] = _Known(value, self.key_of.get(value), since_ms=sent_ms)

    def fetch_sent(
        self,
        member: str,
        partitions: list[int],
        max_wait_ms: int,
        acks: Mapping[int, list[tuple[int, int, int]]],
        now_ms: int,
        *,
        broker_down: bool = False,
    ) -> None:
        fetch = _Fetch(partitions, now_ms, max_wait_ms)
        if broker_down:
            fetch.dead_ms = now_ms
        self.in_flight[member] = fetch
        for partition, items in acks.items():
            offsets = {offset for offset, _v, _t in items}
            for key, held in self.holds.items():
                if key[0] == partition:
                    held[:] = [h for h in held if h.member != member or h.offset not in offsets]
            known = self.known.get(partition, {})
            for offset, value, kind in items:
                entry = known.get(offset)
                if entry is not None and entry.value == value and kind in SETTLING:
                    entry.settling = True
                    entry.acks_open_until = math.inf

    def acks_answered(self, partition: int, items: list[tuple[int, int, int]], now_ms: int) -> None:
        known = self.known.get(partition, {})
        for offset, value, kind in items:
            entry = known.get(offset)
            if entry is not None and entry.value == value and kind in SETTLING:
                entry.acks_open_until = now_ms

    def fetch_failed(self, member: str, now_ms: int) -> None:
        fetch = self.in_flight.pop(member, None)
        if fetch is None:
            return
        until = min(
            float(max(now_ms, fetch.sent_ms + fetch.max_wait_ms) + self.unseen_slack_ms),
            fetch.dead_ms,
        )
        for partition in fetch.partitions:
            self.unseen.setdefault(partition, []).append(until)

    def session_lost(self, member: str) -> None:
        for held in self.holds.values():
            held[:] = [h for h in held if h.member != member]

    def heartbeat_ok(self, member: str, sent_ms: int) -> None:
        self.heartbeat_ms[member] = max(sent_ms, self.heartbeat_ms.get(member, sent_ms))

    def disturbed(self, *, ongoing: bool, broker_died: bool, now_ms: int) -> None:
        """A crash, a clean shutdown or a dropped connection: no hold is sure any more
        (`ongoing`: nor until the next call). A dead broker acquires nothing more for
        the ShareFetches it had."""
        self.holds.clear()
        self.turbulent = ongoing
        if broker_died:
            for fetch in self.in_flight.values():
                fetch.dead_ms = min(fetch.dead_ms, now_ms)
            for untils in self.unseen.values():
                untils[:] = [min(until, now_ms) for until in untils]

    def produce_unanswered(self, partition: int, count: int) -> None:
        """A produce of `count` records went unanswered (written or not, somewhere)."""
        self.unanswered[partition] = self.unanswered.get(partition, 0) + count

    def lossy(self) -> None:
        """A power loss took bytes (module docstring): the share state may speak of
        offsets the log lost and now holds other records at; offsets are trusted
        again above any the broker may have seen before."""
        self.known.clear()
        self.holds.clear()
        for partition in set(self.highest) | set(self.unanswered):
            floor = self.highest.get(partition, -1) + self.unanswered.get(partition, 0) + 1
            self.trusted_from[partition] = max(self.trusted_from.get(partition, 0), floor)

    # ---- the checks

    def answered(
        self,
        member: str,
        parts: Mapping[int, tuple[list[tuple[int, int, int]], dict[int, int]]],
        now_ms: int,
    ) -> list[tuple[str, object]]:
        """`member`'s ShareFetch was answered: by partition, the records it acquired
        (offset, value, delivery count) and those of the batches sent (offset ->
        value). The violations of I1 and I2."""
        fetch = self.in_flight.pop(member, None)
        sent_ms = fetch.sent_ms if fetch is not None else now_ms
        violations: list[tuple[str, object]] = []
        for partition, (records, seen) in sorted(parts.items()):
            violations += self._acquired(member, partition, records, seen, sent_ms, now_ms)
        return violations

    def _acquired(
        self,
        member: str,
        partition: int,
        records: list[tuple[int, int, int]],
        seen: Mapping[int, int],
        sent_ms: int,
        now_ms: int,
    ) -> list[tuple[str, object]]:
        self.acquisitions += 1
        acquisition = self.acquisitions
        self._learn(partition, seen)
        known = self.known.setdefault(partition, {})
        trusted = self._trusted_from(partition)
        taken = {offset for offset, _v, _c in records}
        held_elsewhere = {
            key: [h for h in held if self._surely_held(h, now_ms)]
            for (p, key), held in self.holds.items()
            if p == partition
        }
        held_elsewhere = {key: held for key, held in held_elsewhere.items() if held}
        unsettled: dict[bytes, int] = {}
        """Key -> its lowest offset surely not acknowledged nor archived, not taken now."""
        later: dict[bytes, int] = {}
        """Key -> its highest known offset not (maybe) settled."""
        for offset, entry in known.items():
            if entry.key is None or offset < trusted or entry.settling:
                continue
            later[entry.key] = max(offset, later.get(entry.key, offset))
            if offset in taken or self._count_bound(partition, entry) >= self.delivery_limit:
                continue
            unsettled[entry.key] = min(offset, unsettled.get(entry.key, offset))
        self.counts["keys surely held by another acquisition at an answer"] += len(held_elsewhere)
        self.counts["keys surely held back by an unsettled record at an answer"] += sum(
            1 for key, first in unsettled.items() if later[key] > first
        )
        violations: list[tuple[str, object]] = []
        for offset, value, _count in records:
            key = self.key_of.get(value)
            if key is None:
                continue
            for held in held_elsewhere.get(key, []):
                violations.append(
                    (
                        "I1: no two acquisitions hold records of one key at once",
                        (partition, key, (member, offset), (held.member, held.offset)),
                    )
                )
            first = unsettled.get(key)
            if first is not None and first < offset:
                entry = known[first]
                violations.append(
                    (
                        "I2: no record is handed out while an earlier record of its key "
                        "is not acknowledged",
                        (partition, key, (member, offset), (first, entry.count)),
                    )
                )
        for offset, value, count in records:
            if offset < trusted:
                continue
            found = known.get(offset)
            if found is None or found.value != value:
                found = known[offset] = _Known(value, self.key_of.get(value), since_ms=sent_ms)
            entry = found
            entry.count = count
            entry.since_ms = sent_ms
            if entry.acks_open_until <= sent_ms:
                entry.settling = False
        if not self.turbulent:
            for offset, value, _count in records:
                key = self.key_of.get(value)
                if key is not None:
                    self.holds.setdefault((partition, key), []).append(
                        _Held(member, acquisition, offset, sent_ms)
                    )
        return violations

    # ---- helpers

    def trusted(self, partition: int, offset: int) -> bool:
        """Whether the record at `offset` is the one the share state speaks of."""
        return offset >= self._trusted_from(partition)

    def _trusted_from(self, partition: int) -> int:
        return self.trusted_from.get(partition, 0)

    def _saw(self, partition: int, offset: int) -> None:
        self.highest[partition] = max(offset, self.highest.get(partition, -1))

    def _learn(self, partition: int, seen: Mapping[int, int]) -> None:
        trusted = self._trusted_from(partition)
        known = self.known.setdefault(partition, {})
        if seen:
            self._saw(partition, max(seen))
        for offset, value in seen.items():
            if offset < trusted:
                continue
            entry = known.get(offset)
            if entry is None or entry.value != value:
                known[offset] = _Known(value, self.key_of.get(value), since_ms=-math.inf)

    def _surely_held(self, held: _Held, now_ms: int) -> bool:
        beat = self.heartbeat_ms.get(held.member)
        return (
            held.sent_ms + self.lock_ms > now_ms + 1
            and beat is not None
            and beat + self.session_timeout_ms > now_ms + 1
        )

    def _count_bound(self, partition: int, entry: _Known) -> int:
        """The highest delivery count `entry` may have reached: its last seen one plus
        the ShareFetches of its partition that may have acquired it unseen since."""
        unseen = sum(1 for until in self.unseen.get(partition, []) if until > entry.since_ms)
        unseen += sum(1 for f in self.in_flight.values() if partition in f.partitions)
        return entry.count + unseen
