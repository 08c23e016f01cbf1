"""The crash soak: a broker SIGKILLed again and again under a mixed load,
with what the clients were told checked after every restart.

The load, each part on its own thread, against one `shoal serve` process:

- an idempotent producer (confluent-kafka, acks=all) sending sequence-numbered values
  (`b"%09d" % seq`) in bursts of random size into a `PARTITIONS`-partition topic;
- a plain fetcher: a consumer-group Consumer (subscribe) reading the topic and
  committing its position synchronously every 200 ms (crash_load.Fetching says why
  not auto-commit);
- `SHARE_CONSUMERS` ShareConsumers in explicit mode, one share group, acknowledging by
  the record's fate (`seq % 10`): REJECT, RELEASE once then ACCEPT, RELEASE always
  ("poison", archived at the delivery limit), ACCEPT otherwise, then commit_sync;
- between rounds, `shoal share-groups --reset-offsets --execute` on a second share
  group that has no members (to earliest or latest, at random).

Each round waits a random time and kills the broker at one of three kinds of moment:
after a plain random delay, just after a produce burst starts (mid-produce), or just
after a ShareConsumer has sent its acknowledgements (mid-ack, inside commit_sync). It
restarts the broker on the same data directory and port, then checks:

- the log, read back from where the previous check stopped to the highest offset the
  producer was told: offsets contiguous, no value stored twice (idempotence), every
  acknowledged value at the offset the producer was told;
- the share consumers: no record whose ACCEPT or REJECT (or release at the limit) was
  confirmed by commit_sync is delivered again; no delivery count above the limit;
- the reset group's start offsets are what the last successful reset set;
- the fetcher's group: every offset commit the broker confirmed survived, i.e. each
  partition's committed offset is at least the highest confirmed one (the offsets
  just before the kill are recorded too, for the report of a failure).

At the end the producer is flushed (every record must be acknowledged), the whole log
is read back once more from offset 0, and the share consumers drain the topic until
the group's lag is 0 on every partition. `Soak.run()` returns a `SoakReport`; any
violation raises `AssertionError` naming the seed.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Message, TopicPartition

from tests.support.broker import BrokerProcess
from tests.support.cli import shoal
from tests.support.clients import consumer, create_topic, read_partitions
from tests.support.crash_load import (
    PARTITIONS,
    SHARE_CONSUMERS,
    Fetching,
    Ledger,
    Producing,
    Sharing,
)
from tests.support.share_admin import describe_offsets
from tests.support.share_consumers import share_consumer, share_group
from tests.support.share_ledger import DELIVERY_LIMIT, POISON, fate

LOCK_MS = 5_000
ROUND_DELAY_S = (0.3, 2.0)
MOMENT_WAIT_S = 5.0
"""How long a mid-produce or mid-ack kill waits for its moment before killing anyway."""
DRAIN_TIMEOUT_S = 240.0
LAG_EVERY_S = 1.0
"""How often the drain asks the share group's lag (DescribeShareGroupOffsets)."""
SETTLE_S = 15.0
"""After the lag reached 0, how long the drain waits for the consumers to report the
records of their last polls before judging what is left."""
DRAIN_STEP_S = 0.2
DRAIN_LOG_EVERY_S = 30.0
READ_TIMEOUT_S = 120.0
MOMENTS = ("delay", "mid-produce", "mid-ack")


@dataclass
class Round:
    kill: int
    moment: str
    run_s: float
    restart_s: float
    check_s: float
    acked: int
    checked: int
    reset: str | None


@dataclass
class Drained:
    records: int
    """Records not yet finished by a consumer when the drain began."""
    archived_unseen: int
    """Records archived at the limit after a delivery no consumer processed."""


@dataclass
class SoakReport:
    seed: int
    kills: int
    produced: int
    acked: int
    lost: int
    duplicated: int
    fetched: int
    fetch_committed: int
    fetch_commits: int
    share_acks: int
    share_done: int
    share_unconfirmed: int
    share_archived_unseen: int
    drain_backlog: int
    resets: int
    rounds: list[Round]
    drain_s: float
    total_s: float

    def summary(self) -> dict[str, Any]:
        restarts = sorted(r.restart_s for r in self.rounds)
        return {
            "seed": self.seed,
            "kills_survived": self.kills,
            "records_produced": self.produced,
            "records_acked": self.acked,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "fetched_by_group_consumer": self.fetched,
            "group_offsets_committed": self.fetch_committed,
            "group_commits_confirmed": self.fetch_commits,
            "share_acks_sent": self.share_acks,
            "share_final_acks_confirmed": self.share_done,
            "share_final_acks_unreported": self.share_unconfirmed,
            "share_archived_after_unseen_last_delivery": self.share_archived_unseen,
            "admin_resets": self.resets,
            "moments": {m: sum(r.moment == m for r in self.rounds) for m in MOMENTS},
            "restart_s_median": restarts[len(restarts) // 2] if restarts else 0.0,
            "restart_s_max": restarts[-1] if restarts else 0.0,
            "drain_backlog_records": self.drain_backlog,
            "drain_s": round(self.drain_s, 2),
            "total_s": round(self.total_s, 2),
        }


class LogCheck:
    """Reads the topic back incrementally and checks it against what was acknowledged."""

    def __init__(self, bootstrap: str, topic: str, seed: int) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.seed = seed
        self.stored_at: dict[int, tuple[int, int]] = {}
        self.verified_end = dict.fromkeys(range(PARTITIONS), 0)
        self.pending: list[tuple[int, int, int]] = []
        self.next_acked = 0
        self.lost: list[str] = []
        self.duplicated: list[str] = []

    def check(self, ledger: Ledger) -> int:
        """Read from where the last check stopped to the highest acknowledged offset;
        returns how many acknowledged records were checked. Raises on any violation."""
        with ledger.lock:
            fresh = ledger.acked[self.next_acked :]
            self.next_acked = len(ledger.acked)
        self.pending.extend(fresh)
        end = dict(self.verified_end)
        for _, partition, offset in self.pending:
            end[partition] = max(end[partition], offset + 1)
        positions = dict(self.verified_end)

        def on_record(message: Message) -> None:
            partition = int(message.partition() or 0)
            offset = int(message.offset() or 0)
            assert offset == positions[partition], (
                f"seed {self.seed}: partition {partition} offset {offset} read, "
                f"{positions[partition]} expected (gap)"
            )
            positions[partition] = offset + 1
            seq = int(message.value() or b"-1")
            earlier = self.stored_at.setdefault(seq, (partition, offset))
            if earlier != (partition, offset):
                self.duplicated.append(f"seq {seq} stored at {earlier} and {(partition, offset)}")

        read_partitions(
            self.bootstrap,
            self.topic,
            end,
            start_offsets=self.verified_end,
            timeout_s=READ_TIMEOUT_S,
            on_record=on_record,
        )
        self.verified_end = end
        still: list[tuple[int, int, int]] = []
        checked = 0
        for seq, partition, offset in self.pending:
            if offset >= end[partition]:
                still.append((seq, partition, offset))
                continue
            stored = self.stored_at.get(seq)
            if stored != (partition, offset):
                self.lost.append(
                    f"acknowledged seq {seq} at {(partition, offset)} is "
                    + ("missing" if stored is None else f"at {stored}")
                )
            checked += 1
        self.pending = still
        assert not self.lost and not self.duplicated, (
            f"seed {self.seed}: {len(self.lost)} lost, {len(self.duplicated)} duplicated: "
            f"{self.lost[:5]} {self.duplicated[:5]}"
        )
        return checked


class ResetGroup:
    """A share group with no members whose start offsets the admin tool resets; the
    last successful reset must hold, across restarts."""

    def __init__(self, broker: BrokerProcess, topic: str, group: str) -> None:
        self.broker = broker
        self.topic = topic
        self.group = group
        self.expected: dict[int, int] | None = None
        self.resets = 0

    def reset(self, rng: random.Random) -> str | None:
        to = rng.choice(("--to-earliest", "--to-latest"))
        done = shoal(
            "share-groups",
            "--bootstrap-server",
            self.broker.bootstrap,
            "--reset-offsets",
            "--group",
            self.group,
            "--topic",
            self.topic,
            to,
            "--execute",
        )
        assert "Traceback" not in done.stderr, done.stderr
        if done.returncode != 0:
            return None  # e.g. the broker was not ready yet; nothing was promised
        self.resets += 1
        self.expected = self.start_offsets()
        if to == "--to-earliest":
            assert self.expected == dict.fromkeys(range(PARTITIONS), 0), self.expected
        return to

    def start_offsets(self) -> dict[int, int]:
        offsets = describe_offsets(
            self.broker.bootstrap, self.group, {self.topic: list(range(PARTITIONS))}
        )
        return {p: start for p, (start, _, _) in offsets.get(self.topic, {}).items()}

    def check(self) -> None:
        if self.expected is not None:
            now = self.start_offsets()
            assert now == self.expected, f"reset group offsets {now}, last reset {self.expected}"


class Soak:
    def __init__(
        self,
        broker: BrokerProcess,
        *,
        kills: int,
        seed: int,
        topic: str,
        log: Any = None,
        drain_timeout_s: float = DRAIN_TIMEOUT_S,
    ) -> None:
        self.broker = broker
        self.kills = kills
        self.seed = seed
        self.rng = random.Random(seed)
        self.topic = topic
        self.log = log or (lambda line: None)
        self.ledger = Ledger()
        self.drain_timeout_s = drain_timeout_s
        self.before_kill: tuple[dict[int, int], dict[int, int]] | None = None
        """The group's committed offsets and the fetcher's confirmed ones just before
        the last kill, named in a failed `check_commits` (a commit lost in the crash
        shows as committed >= confirmed here and lower after the restart)."""

    def run(self) -> SoakReport:
        began = time.monotonic()
        bootstrap = self.broker.bootstrap
        create_topic(bootstrap, self.topic, partitions=PARTITIONS)
        group = share_group(
            bootstrap,
            f"{self.topic}-share",
            reset="earliest",
            lock_ms=LOCK_MS,
            delivery_limit=DELIVERY_LIMIT,
        )
        reset_group = ResetGroup(
            self.broker, self.topic, share_group(bootstrap, f"{self.topic}-reset")
        )
        shares = [
            share_consumer(
                bootstrap,
                group,
                [self.topic],
                explicit=True,
                max_poll_records=100,
                log_level=2,  # connection failures are expected
            )
            for _ in range(SHARE_CONSUMERS)
        ]
        producing = Producing(bootstrap, self.topic, self.ledger, random.Random(self.seed + 1))
        fetching = Fetching(bootstrap, self.topic, f"{self.topic}-fetch", self.ledger)
        sharing = Sharing(shares, self.ledger)
        log_check = LogCheck(bootstrap, self.topic, self.seed)
        rounds: list[Round] = []
        try:
            for thread in (producing, fetching, sharing):
                thread.start()
            for kill in range(1, self.kills + 1):
                rounds.append(
                    self.one_round(kill, producing, fetching, sharing, log_check, reset_group)
                )
                self.assert_clean(producing)
            fetching.stop.set()
            remaining = producing.flush(300)
            assert remaining == 0, f"seed {self.seed}: {remaining} records never acknowledged"
            self.assert_clean(producing)
            log_check.check(self.ledger)
            full = LogCheck(bootstrap, self.topic, self.seed)
            full.check(self.ledger)  # once more from offset 0: nothing vanished since
            assert len(full.stored_at) == producing.sent == len(self.ledger.acked), (
                f"seed {self.seed}: {producing.sent} sent, {len(self.ledger.acked)} acked, "
                f"{len(full.stored_at)} in the log"
            )
            drain_began = time.monotonic()
            backlog = self.drain(group)
            drain_s = time.monotonic() - drain_began
            sharing.stop.set()
            sharing.join(30)
            fetching.join(30)
        finally:
            for thread in (producing, fetching, sharing):
                thread.stop.set()
            sharing.join(30)
            for share in shares:
                share.close()
        self.check_poison()
        return SoakReport(
            seed=self.seed,
            kills=len(rounds),
            produced=producing.sent,
            acked=len(self.ledger.acked),
            lost=len(full.lost),
            duplicated=len(full.duplicated),
            fetched=fetching.fetched,
            fetch_committed=sum(fetching.confirmed_commits().values()),
            fetch_commits=fetching.commits,
            share_acks=sharing.acks,
            share_done=len(self.ledger.done),
            share_unconfirmed=len(self.ledger.unconfirmed),
            share_archived_unseen=backlog.archived_unseen,
            drain_backlog=backlog.records,
            resets=reset_group.resets,
            rounds=rounds,
            drain_s=drain_s,
            total_s=time.monotonic() - began,
        )

    def one_round(
        self,
        kill: int,
        producing: Producing,
        fetching: Fetching,
        sharing: Sharing,
        log_check: LogCheck,
        reset_group: ResetGroup,
    ) -> Round:
        began = time.monotonic()
        moment = self.rng.choice(MOMENTS)
        time.sleep(self.rng.uniform(*ROUND_DELAY_S))
        if moment != "delay":
            event = producing.burst if moment == "mid-produce" else sharing.acking
            event.clear()
            event.wait(MOMENT_WAIT_S)
            time.sleep(self.rng.uniform(0.0, 0.02))
        run_s = time.monotonic() - began
        self.before_kill = self.commits_now(fetching)
        self.broker.kill()
        restarted = time.monotonic()
        self.broker.start()
        restart_s = time.monotonic() - restarted
        checking = time.monotonic()
        checked = log_check.check(self.ledger)
        self.check_commits(fetching)
        reset_group.check()
        reset = reset_group.reset(self.rng) if self.rng.random() < 0.3 else None
        check_s = time.monotonic() - checking
        with self.ledger.lock:
            acked = len(self.ledger.acked)
        result = Round(kill, moment, run_s, restart_s, check_s, acked, checked, reset)
        self.log(
            f"kill {kill:3d} {moment:11s} after {run_s:5.2f}s: restart {restart_s:5.2f}s, "
            f"check {check_s:5.2f}s, {acked} acked, {checked} checked"
            + (f", reset {reset}" if reset else "")
        )
        return result

    def check_commits(self, fetching: Fetching) -> None:
        """Every offset commit the fetcher was told of survived: the group's committed
        offset of each partition is at least the highest confirmed one."""
        confirmed = fetching.confirmed_commits()
        now, _ = self.commits_now(fetching)
        behind = {p: (now.get(p), at) for p, at in confirmed.items() if now.get(p, -1) < at}
        assert not behind, (
            f"seed {self.seed}: committed offsets went back (now, confirmed): {behind}; "
            f"just before the kill (committed, confirmed): {self.before_kill}"
        )

    def commits_now(self, fetching: Fetching) -> tuple[dict[int, int], dict[int, int]]:
        """The group's committed offsets (OffsetFetch), and what the fetcher had been
        told was committed before asking."""
        confirmed = fetching.confirmed_commits()
        reader = consumer(self.broker.bootstrap, group_id=fetching.group)
        try:
            stored = reader.committed(
                [TopicPartition(self.topic, p) for p in range(PARTITIONS)], timeout=30
            )
        finally:
            reader.close()
        return {tp.partition: tp.offset for tp in stored}, confirmed

    def assert_clean(self, producing: Producing) -> None:
        with self.ledger.lock:
            assert not producing.fatal, f"seed {self.seed}: fatal producer error {producing.fatal}"
            assert not self.ledger.failed, f"seed {self.seed}: {self.ledger.failed[:5]}"
            assert not self.ledger.violations, f"seed {self.seed}: {self.ledger.violations[:10]}"

    def drain(self, group: str) -> Drained:
        """Let the share consumers (still running) finish the backlog; return when the
        group's lag is 0 on every partition and no acknowledged record is unfinished
        by the consumers (`ShareLedger.unfinished`).

        The lag is asked every `LAG_EVERY_S` whatever the ledger says. Once it is 0
        the broker has nothing left to deliver: records no consumer finished within
        `SETTLE_S` after that are judged by what the consumers saw
        (`ShareLedger.judge_leftovers`): archived at the limit after a delivery no
        consumer processed is counted; any other is a failure, named with its
        deliveries."""
        deadline = time.monotonic() + self.drain_timeout_s
        began = time.monotonic()
        next_lag = next_log = 0.0
        lags: dict[int, int] = {}
        lag_zero_at: float | None = None
        backlog = -1
        while True:
            now = time.monotonic()
            with self.ledger.lock:
                missing = {seq for seq, _, _ in self.ledger.acked} - self.ledger.done
                unreported = self.ledger.unfinished(missing)
            if backlog < 0:
                backlog = len(unreported)
            if now >= next_lag:
                offsets = describe_offsets(
                    self.broker.bootstrap, group, {self.topic: list(range(PARTITIONS))}
                )
                lags = {p: lag for p, (_, _, lag) in offsets.get(self.topic, {}).items()}
                next_lag = now + LAG_EVERY_S
                at_zero = len(lags) == PARTITIONS and not any(lags.values())
                lag_zero_at = (lag_zero_at or now) if at_zero else None
            if now >= next_log:
                self.log(
                    f"drain {now - began:6.1f}s: {len(unreported)} of {backlog} records "
                    f"left, lags {lags}"
                )
                next_log = now + DRAIN_LOG_EVERY_S
            if lag_zero_at is not None and (not unreported or now - lag_zero_at >= SETTLE_S):
                break
            assert now < deadline, (
                f"seed {self.seed}: {len(missing)} records never finished "
                f"({len(unreported)} never acknowledged), e.g. "
                f"{[(seq, self.ledger.deliveries.get(seq)) for seq in sorted(missing)[:10]]}; "
                f"lags {lags}"
            )
            time.sleep(DRAIN_STEP_S)
        with self.ledger.lock:
            unseen_last, lost = self.ledger.judge_leftovers(self.ledger.unfinished(missing))
            assert not lost, (
                f"seed {self.seed}: lag 0 but {len(lost)} records finished by no consumer, "
                f"e.g. {[(seq, self.ledger.deliveries.get(seq)) for seq in lost[:10]]}"
            )
        assert not self.ledger.violations, f"seed {self.seed}: {self.ledger.violations[:10]}"
        return Drained(records=backlog, archived_unseen=len(unseen_last))

    def check_poison(self) -> None:
        for seq, counts in self.ledger.deliveries.items():
            assert counts == sorted(counts) or fate(seq) != POISON, (
                f"seed {self.seed}: delivery counts of {seq} went down: {counts}"
            )
            assert max(counts) <= DELIVERY_LIMIT, f"seed {self.seed}: {seq} saw {counts}"
