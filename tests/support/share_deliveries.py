"""Share consumers as child processes that log every delivery
(tests/support/share_delivery_child.py), and the judges of key-ordered delivery
(`shoal.share.delivery.order=key`, docs/design/key-order.md) over what they logged.

A record is *held* by a consumer from the moment its poll returned it to the moment
its acknowledgement was handed to commit_sync (or the consumer was SIGKILLed, or the
broker was). The broker acquired it no later than the first and released or
acknowledged it no earlier than the second, so the held interval lies inside the
broker's acquisition: if the broker keeps all ACQUIRED records of a key in one
acquisition (invariant I1), held intervals of one key on different consumers never
overlap. The one exception is a batch the broker acquired before a SIGKILL of itself
and the consumer's poll returned after it: that acquisition died with the broker, so
such a batch (received after a broker kill, its acknowledgement not confirmed) is not
judged.

Times are CLOCK_MONOTONIC, which every process of the machine shares.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support import processes
from tests.support.share_consumers import describe, producer

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 60.0
FINAL = ("accept",)
"""The acknowledgements the child sends that end a record (RELEASE does not, except at
the delivery limit)."""


@dataclass
class Delivery:
    consumer: int
    batch: tuple[int, int]
    """(consumer, index of the consumer's non-empty poll)."""
    offset: int
    key: str | None
    value: str | None
    count: int
    timestamp_ms: int
    deliver_at: str | None
    recv: float
    wall_ms: float
    ack: str | None = None
    sent: float | None = None
    answered: float | None = None
    confirmed: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def seq(self) -> int:
        assert self.value is not None
        return int(self.value.split(":")[0])

    @property
    def fate(self) -> str:
        assert self.value is not None
        return self.value.rpartition(":")[2]


@dataclass
class Batch:
    consumer: int
    index: int
    recv: float
    deliveries: list[Delivery]
    sent: float | None = None
    answered: float | None = None
    ok: bool = False
    errors: list[str] = field(default_factory=list)


@dataclass
class Child:
    id: int
    process: subprocess.Popen[bytes]
    log: Path
    killed_at: float | None = None


class Consumers:
    """ShareConsumer child processes of one group, their logs and their ends."""

    def __init__(self, root: Path, bootstrap: str, group: str, topic: str) -> None:
        self.root = root
        self.bootstrap = bootstrap
        self.group = group
        self.topic = topic
        self.stop_file = root / f"stop-{group}"
        self.children: list[Child] = []

    def spawn(
        self,
        *,
        hold_ms: int = 0,
        max_poll_records: int = 500,
        stall_poll: int = -1,
        stall_ms: int = 0,
    ) -> Child:
        index = len(self.children)
        log = self.root / f"{self.group}-{index}.jsonl"
        args = [
            sys.executable,
            "-m",
            "tests.support.share_delivery_child",
            "--bootstrap",
            self.bootstrap,
            "--group",
            self.group,
            "--topic",
            self.topic,
            "--id",
            str(index),
            "--log",
            str(log),
            "--stop",
            str(self.stop_file),
            "--hold-ms",
            str(hold_ms),
            "--max-poll-records",
            str(max_poll_records),
            "--stall-poll",
            str(stall_poll),
            "--stall-ms",
            str(stall_ms),
        ]
        python_path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
        with open(log.with_suffix(".stderr"), "ab") as stderr:
            process = subprocess.Popen(
                args,
                cwd=REPO,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env={**os.environ, "PYTHONPATH": python_path},
            )
        child = Child(index, process, log)
        self.children.append(child)
        return child

    def wait_for_members(self, count: int, *, timeout_s: float = START_TIMEOUT_S) -> None:
        """Until the group is Stable with `count` members at the assignment epoch."""
        deadline = time.monotonic() + timeout_s
        while True:
            for child in self.children:
                if child.killed_at is None and child.process.poll() is not None:
                    raise AssertionError(f"consumer {child.id} exited ({child.process.returncode})")
            described = describe(self.bootstrap, self.group)
            if (
                described.group_state == "Stable"
                and len(described.members) == count
                and all(m.member_epoch == described.assignment_epoch for m in described.members)
            ):
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.group}: {len(described.members)} members "
                    f"({described.group_state}) after {timeout_s} s, wanted {count}"
                )
            time.sleep(0.1)

    def kill(self, child: Child) -> float:
        """SIGKILL a consumer; returns the time just before the signal (its records
        are held until then at the latest)."""
        child.killed_at = time.monotonic()
        child.process.send_signal(signal.SIGKILL)
        child.process.wait(processes.REAP_TIMEOUT_S)
        return child.killed_at

    def stop(self, timeout_s: float = 30.0) -> None:
        """Ask every consumer to close (the stop file), then SIGKILL the laggards."""
        self.stop_file.touch()
        deadline = time.monotonic() + timeout_s
        for child in self.children:
            try:
                child.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                processes.kill(child.process)

    def batches(self) -> list[Batch]:
        """Every non-empty poll of every consumer, with what became of it."""
        out: list[Batch] = []
        for child in self.children:
            out.extend(read_batches(child.id, child.log))
        return out

    def errors(self) -> list[str]:
        """Error lines the consumers logged (poll errors, error messages)."""
        found = []
        for child in self.children:
            for event in read_events(child.log):
                if event["ev"] == "error":
                    found.append(f"consumer {child.id}: {event['err']}")
        return found

    def killed(self) -> dict[int, float]:
        return {c.id: c.killed_at for c in self.children if c.killed_at is not None}


def read_events(log: Path) -> list[dict[str, Any]]:
    """The complete JSON lines of a consumer's log (a SIGKILL may cut the last)."""
    if not log.exists():
        return []
    events = []
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events


def read_batches(consumer: int, log: Path) -> list[Batch]:
    batches: list[Batch] = []
    for event in read_events(log):
        if event["ev"] == "recv":
            index = len(batches)
            batches.append(
                Batch(
                    consumer,
                    index,
                    event["t"],
                    [
                        Delivery(
                            consumer,
                            (consumer, index),
                            offset,
                            key,
                            value,
                            count,
                            timestamp_ms,
                            deliver_at,
                            event["t"],
                            event["wall_ms"],
                        )
                        for offset, key, value, count, timestamp_ms, deliver_at in event["recs"]
                    ],
                )
            )
        elif event["ev"] == "send":
            batch = batches[-1]
            batch.sent = event["t"]
            kinds = dict((offset, kind) for offset, kind in event["acks"])
            for delivery in batch.deliveries:
                delivery.ack = kinds.get(delivery.offset)
                delivery.sent = event["t"]
        elif event["ev"] == "ans":
            batch = batches[-1]
            batch.answered = event["t"]
            batch.ok = bool(event["ok"])
            batch.errors = list(event["errors"])
            for delivery in batch.deliveries:
                delivery.answered = event["t"]
                delivery.confirmed = batch.ok
                delivery.errors = batch.errors
    return batches


def deliveries_of(batches: Iterable[Batch]) -> list[Delivery]:
    """Every delivery, in the order they were received."""
    return sorted((d for b in batches for d in b.deliveries), key=lambda d: (d.recv, d.offset))


def summary(batches: Sequence[Batch], *, broker_kills: Sequence[float] = ()) -> str:
    """Figures of a run, for the test's output."""
    deliveries = deliveries_of(batches)
    per_consumer = Counter(d.consumer for d in deliveries)
    first_kill = min(broker_kills, default=float("inf"))
    return (
        f"{len(deliveries)} deliveries in {len(batches)} polls "
        f"(per consumer {dict(sorted(per_consumer.items()))}), "
        f"{sum(d.count > 1 for d in deliveries)} redeliveries, "
        f"{sum(not b.ok for b in batches)} polls unconfirmed, "
        f"{sum(stale(b, broker_kills) for b in batches)} not judged (acquired before a "
        f"broker kill), {sum(d.recv > first_kill for d in deliveries)} deliveries after a "
        "broker kill"
    )


# ---- producing


def produce_keyed(
    bootstrap: str,
    topic: str,
    records: Sequence[tuple[str | None, str, Mapping[str, bytes] | None]],
    *,
    batch_records: int = 10_000,
) -> None:
    """Produce (key, value, headers) records to partition 0 in order (idempotent, so
    offsets follow the list), in batches of at most `batch_records` (a share group
    acquires whole producer batches, so small batches spread records over members)."""
    sink = producer(bootstrap, batch_num_messages=batch_records)
    for key, value, headers in records:
        sink.produce(
            topic,
            key=None if key is None else key.encode(),
            value=value.encode(),
            partition=0,
            headers=None if headers is None else list(headers.items()),
        )
        sink.poll(0)
    assert sink.flush(60) == 0, "records still undelivered"


# ---- judging key order


def stale(batch: Batch, broker_kills: Sequence[float]) -> bool:
    """A batch the broker may have acquired before one of its SIGKILLs, received after
    it, its acknowledgement unconfirmed: that acquisition may have died with the
    broker."""
    return not batch.ok and any(kill <= batch.recv for kill in broker_kills)


def held_until(
    batch: Batch,
    killed: Mapping[int, float],
    broker_kills: Sequence[float],
    lock_s: float | None = None,
) -> float:
    """When the consumer's hold of `batch` ended at the latest. With `lock_s`, a hold
    counts for half the lock at most: the lock ran from the acquisition, before the
    poll returned, and a consumer that outstays it holds nothing any more (the half
    covers the time from acquisition to poll's return)."""
    ends = [batch.sent if batch.sent is not None else float("inf")]
    if lock_s is not None:
        ends.append(batch.recv + lock_s / 2)
    if batch.consumer in killed:
        ends.append(killed[batch.consumer])
    ends += [kill for kill in broker_kills if kill >= batch.recv]
    return min(ends)


def overlaps(
    batches: Sequence[Batch],
    *,
    killed: Mapping[int, float] | None = None,
    broker_kills: Sequence[float] = (),
    lock_s: float | None = None,
) -> list[str]:
    """Times two consumers held records of one key at once (invariant I1)."""
    killed = killed or {}
    held: dict[str, list[tuple[float, float, int, int]]] = defaultdict(list)
    for batch in batches:
        if stale(batch, broker_kills):
            continue
        end = held_until(batch, killed, broker_kills, lock_s)
        for key in {d.key for d in batch.deliveries if d.key is not None}:
            held[key].append((batch.recv, end, batch.consumer, batch.index))
    found = []
    for key, intervals in held.items():
        intervals.sort()
        open_: list[tuple[float, float, int, int]] = []
        for start, end, consumer, index in intervals:
            open_ = [i for i in open_ if i[1] > start]
            for other in open_:
                if other[2] != consumer:
                    found.append(
                        f"key {key}: consumer {other[2]} held it {other[0]:.3f}-{other[1]:.3f} "
                        f"(poll {other[3]}), consumer {consumer} got it at {start:.3f} "
                        f"(poll {index})"
                    )
            open_.append((start, end, consumer, index))
    return found


def order_violations(
    batches: Sequence[Batch],
    *,
    delivery_limit: int,
    killed: Mapping[int, float] | None = None,
    broker_kills: Sequence[float] = (),
    lock_s: float | None = None,
) -> list[str]:
    """Deliveries that break per-key order (invariant I2):

    - first deliveries of a key out of offset order;
    - a record delivered while an earlier record of its key was neither finished (its
      ACCEPT sent, or its delivery at the limit over) nor in the same poll;
    - an earlier record of a key delivered after a later one, unless the later one
      came again afterwards (its delivery was undone) or the earlier one was in the
      later one's poll (a consumer that RELEASEs a record and ACCEPTs the later ones
      of its poll gets it back after them: the order it was handed is the consumer's
      to keep).
    """
    killed = killed or {}
    judged = [b for b in batches if not stale(b, broker_kills)]
    by_key: dict[str, list[Delivery]] = defaultdict(list)
    for delivery in deliveries_of(judged):
        if delivery.key is not None:
            by_key[delivery.key].append(delivery)
    batch_of = {(b.consumer, b.index): b for b in judged}
    found: list[str] = []
    for key, deliveries in by_key.items():
        first: dict[int, Delivery] = {}
        finished: dict[int, float] = {}
        for d in deliveries:
            first.setdefault(d.offset, d)
            end = None
            if d.ack in FINAL and d.sent is not None:
                end = d.sent
            elif d.count >= delivery_limit:
                end = held_until(batch_of[d.batch], killed, broker_kills, lock_s)
            if end is not None:
                finished[d.offset] = min(finished.get(d.offset, end), end)
        offsets = sorted(first)
        for earlier, later in itertools.pairwise(offsets):
            a, b = first[earlier], first[later]
            if b.recv < a.recv:
                found.append(
                    f"key {key}: offset {later} first delivered at {b.recv:.3f}, before "
                    f"offset {earlier} at {a.recv:.3f}"
                )
        for d in deliveries:
            same_poll = {x.offset for x in batch_of[d.batch].deliveries}
            for earlier in offsets:
                if earlier >= d.offset:
                    break
                if earlier in same_poll:
                    continue
                if finished.get(earlier, float("inf")) > d.recv:
                    found.append(
                        f"key {key}: offset {d.offset} (count {d.count}) delivered to consumer "
                        f"{d.consumer} at {d.recv:.3f} while offset {earlier} was unfinished "
                        f"(finished at {finished.get(earlier)})"
                    )
            for e in deliveries:
                if e.offset < d.offset and e.recv > d.recv and e.offset not in same_poll:
                    again = any(x.offset == d.offset and x.recv >= e.recv for x in deliveries)
                    if not again:
                        found.append(
                            f"key {key}: offset {e.offset} delivered at {e.recv:.3f} (count "
                            f"{e.count}) after offset {d.offset} at {d.recv:.3f}"
                        )
    return found
