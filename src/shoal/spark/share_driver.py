"""The driver side of the `shoal-share` source: what latestOffset, partitions, commit,
prepareForTriggerAvailableNow and stop do, over a `ShareGroupMember` (I/O) and a
`ShareLedger` (bookkeeping). It lives in Spark's long-lived source runner process.

At least once (docs/design/spark-connector.md §6):

- `latest_offset(start)`: first ACCEPT the batch ending at `start` if this process
  planned (or replayed) it: Spark calls latestOffset(start=end of N) only once commits/N
  is durable. Then acquire up to the limit and plan batch `start.seq + 1` from the
  acquired records, or answer None (no new batch) when nothing was acquired.
- `batch(end)`: the records of the batch `end` names. For a batch this process planned,
  exactly the offset JSON's spans (pure on `end`). For a batch of an earlier run that
  Spark replays after a restart (never planned here), the driver first *reclaims* it:
  the dead run's records went back to the group when its session ended, so they are
  acquired again (each delivery counted by the broker) and the replay reads those of
  them the group handed back. A record that keeps failing its batch is therefore
  redelivered with a rising delivery count until the group archives it at
  `share.delivery.count.limit`; the replay then leaves it out, and the number of
  records left out is added to `arch` in the next offset JSON (and reported by
  `status()`). With other consumers in the same group, a record one of them took
  meanwhile is also left out (and counted): it is theirs now, not lost.
- A batch that keeps failing is split (share_bisect.py): records at delivery count `d`
  go into batches of at most `batch_records_for(d)` records, the replay of a failed
  batch included (it reads its lowest records, the others stay pending for the next
  batches), so a poison record ends alone in its batch and is archived alone at the
  group's `share.delivery.count.limit`. While suspects are about, the driver acquires
  no more than the next batch takes: a record held unplanned when a batch fails has its
  delivery count raised too, and is archived if that was its last delivery. A replay
  first acquires one record to learn the delivery count it is at.
- Records of a committed batch that an earlier run never acknowledged (it died or was
  stopped between commits/N and the next trigger) are ACCEPTed when the group hands
  them back to the restarted query instead of being delivered again
  (`ShareLedger.remember_delivered`).
- Acquisition asks only for what the batch needs: every acquisition counts as a
  delivery, so records acquired and then released unread would lose one of their
  `share.delivery.count.limit` attempts. It uses ShareFetch's batch-optimized mode
  (whole log batches: the broker's cheap path, several times faster than acquiring
  record by record) while no suspect of a failing batch is about; the records beyond
  the batch stay pending for the next one (only a stop or the AvailableNow bound
  releases them). Suspects and replays are acquired in record-limit mode, exactly.
- `commit(end)` ACCEPTs idempotently; `stop()` RELEASEs acquired-but-unplanned records,
  closes the session (the broker releases the rest) and leaves the group; idempotent.
  Spark commits a batch (`commits/N`) and calls commit()/latestOffset() about it only
  at the next trigger, which a stopped query never runs. Given the query's checkpoint
  (`committed`, reading share_checkpoint.py), `stop()` first ACCEPTs the batches it
  finds committed there, so the group's start offset reaches the end of what the
  query processed; without it those records go back to the group (and a restart from
  the checkpoint ACCEPTs them when they are handed back).
- AvailableNow: `bound()` records the partitions' end offsets; records acquired at or
  beyond them are RELEASEd, their partition is not fetched from again in this run, and
  the run ends when an acquisition yields nothing below the bound. (Such a record's
  next delivery shows a delivery count one higher.) Once it has acquired records, an
  AvailableNow run's acquisitions do not wait (`acquireMaxWaitMs` is for records
  still to be produced; these are in the log), so the last, empty one ends the run at
  once.

ACCEPT, RELEASE and RENEW failures are logged with context and never raised: the
broker redelivers whatever was not acknowledged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Final

from shoal.client.ranges import record_count
from shoal.protocol.share import AcknowledgeType
from shoal.spark.share_bisect import DELIVERY_COUNT_LIMIT_DEFAULT, batch_records_for
from shoal.spark.share_checkpoint import ReplayLog
from shoal.spark.share_group import ACCEPT, RELEASE, ShareGroupMember
from shoal.spark.share_ledger import ShareLedger, SpanMap
from shoal.spark.share_offsets import ShareOffset, Spans, covers
from shoal.spark.share_options import RECORDS_PER_BATCH_DEFAULT

log = logging.getLogger(__name__)

ACQUIRE_ROUNDS_MAX: Final = 64
"""ShareFetches one latestOffset (or one reclaim) makes at most; the first waits up to
`acquireMaxWaitMs`, the following ones only while records keep coming."""


class ShareDriver:
    """See the module docstring. Not thread-safe: Spark's runner calls it from one
    thread."""

    def __init__(
        self,
        member: ShareGroupMember,
        *,
        acquire_wait_ms: int,
        committed: Callable[[], Sequence[ShareOffset]] | None = None,
        replay_log: ReplayLog | None = None,
        records_per_batch: int = RECORDS_PER_BATCH_DEFAULT,
        delivery_count_limit: int = DELIVERY_COUNT_LIMIT_DEFAULT,
    ) -> None:
        """`committed` reads the end offsets of the batches Spark committed (see the
        module docstring), or None when the query's checkpoint is unknown;
        `replay_log` keeps what a split replay read (None: replays are not split).
        `records_per_batch` sizes the split of a failing batch until Spark names its
        limit; `delivery_count_limit` is the group's `share.delivery.count.limit`."""
        self.member = member
        self._records_max = records_per_batch
        self._delivery_count_limit = delivery_count_limit
        self._count_hint = 1
        """The highest delivery count the last acquisition brought: what the next
        records are likely at."""
        self._committed = committed
        self._replay_log = replay_log
        self.ledger = ShareLedger()
        self._acquire_wait_ms = acquire_wait_ms
        self._seen_start = False
        self._archived_unreported = 0
        self._archived_reported = 0
        self._last_seq = 0
        self._replays: dict[int, Spans] = {}
        self._stopped = False
        self.counters = {"acquired": 0, "accepted": 0, "released": 0, "ackFailed": 0}

    # ---- Spark's calls

    def latest_offset(self, start: ShareOffset, *, records_max: int) -> ShareOffset | None:
        """The next batch's end offset, or None when nothing was acquired."""
        self._forget_lost()
        self._settle(start)
        self._archived_reported = start.archived
        self._records_max = records_max
        self._fill(records_max)
        seq = start.seq + 1
        planned = self.ledger.plan(seq=seq, records_max=records_max, limit_for=self._batch_limit)
        if not planned:
            return None
        self._archived_reported += self._archived_unreported
        self._archived_unreported = 0
        self._last_seq = seq
        return ShareOffset(seq=seq, archived=self._archived_reported, spans=planned)

    def batch(self, end: ShareOffset) -> Spans:
        """The spans the batch `end` reads (see the module docstring)."""
        replay = self._replays.get(end.seq)
        if replay is not None:
            return replay
        if end.seq <= max(self._last_seq, self.ledger.settled_seq):
            return end.spans  # planned here: exactly what the offset JSON names
        replay = self._reclaim(end)
        self._replays = {end.seq: replay}
        return replay

    def commit(self, end: ShareOffset) -> None:
        self._acknowledge(self.ledger.settle(end.seq), ACCEPT, "ACCEPT")

    def bound(self) -> None:
        """AvailableNow: only records below the current end offsets are read."""
        ends = self.member.end_offsets()
        self._acknowledge(self.ledger.bound(ends), RELEASE, "RELEASE")
        log.info(
            "share group %s: AvailableNow bound at %s",
            self.member.settings.group_id,
            {f"{tp.topic}-{tp.partition}": end for tp, end in sorted(ends.items())},
        )

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            self._accept_committed()
            self._acknowledge(self.ledger.release_pending(), RELEASE, "RELEASE")
        except Exception:  # the session close below releases them anyway
            log.warning("acknowledgement at stop failed", exc_info=True)
        finally:
            self.member.close()

    def status(self) -> dict[str, Any]:
        """What `reportLatestOffset` shows in the query progress."""
        return {
            "seq": self._last_seq,
            "archived": self._archived_reported + self._archived_unreported,
            "pending": self.ledger.pending_count,
            "lockDurationMs": self.member.lock_duration_ms,
            **self.counters,
        }

    # ---- internals

    def _accept_committed(self) -> None:
        """ACCEPT the planned batches the checkpoint shows committed. A batch matches
        by seq and by its records lying within the checkpointed end offset, so a
        checkpoint of another query never ACCEPTs anything."""
        if self._committed is None or self.ledger.planned_count == 0:
            return
        try:
            offsets = self._committed()
        except OSError:
            log.warning(
                "share group %s: the checkpoint could not be read at stop; the records of "
                "batches committed since the last trigger go back to the group",
                self.member.settings.group_id,
                exc_info=True,
            )
            return
        done = [
            end.seq
            for end in offsets
            if (planned := self.ledger.planned(end.seq)) is not None and covers(end.spans, planned)
        ]
        if done:
            log.info(
                "share group %s: batches up to seq %d committed by Spark after the last "
                "trigger; accepting them at stop",
                self.member.settings.group_id,
                max(done),
            )
            self._acknowledge(self.ledger.settle(max(done)), ACCEPT, "ACCEPT")

    def _settle(self, start: ShareOffset) -> None:
        if not self._seen_start:
            self._seen_start = True
            if start.spans and self.ledger.planned(start.seq) is None:
                # committed by an earlier run, maybe never acknowledged
                self.ledger.remember_delivered(self._read_by(start))
        self._acknowledge(self.ledger.settle(start.seq), ACCEPT, "ACCEPT")

    def _read_by(self, end: ShareOffset) -> Spans:
        """The records batch `end` read: those of its offset JSON, or fewer when it was a
        split replay."""
        replay = None if self._replay_log is None else self._replay_log.load()
        return end.spans if replay is None or replay.seq != end.seq else replay.spans

    def _batch_limit(self, delivery_count: int) -> int:
        return batch_records_for(
            delivery_count, records_max=self._records_max, limit=self._delivery_count_limit
        )

    def _fill(self, records_max: int) -> None:
        # AvailableNow reads records already in the log: once some came, a fetch finds
        # the rest at once, and waiting only delays the run's end by a whole wait
        wait_ms = 0 if self.ledger.bounded and self.counters["acquired"] else self._acquire_wait_ms
        for _ in range(ACQUIRE_ROUNDS_MAX):
            count = max(self._count_hint, self.ledger.pending_delivery_count_max())
            limit = self._batch_limit(count)
            wanted = min(records_max, limit) - self.ledger.pending_count
            if wanted <= 0:
                return
            if not self._acquire(wanted, wait_ms, exact=limit < records_max):
                return
            wait_ms = 0

    def _reclaim(self, end: ShareOffset) -> Spans:
        """Acquire the records of the batch `end` back and make the replay of those the
        split allows (see the module docstring): a first acquisition of one record
        tells the delivery count, then up to the batch limit for it. Without a replay
        log the replay is not split (all that comes back is read)."""
        wait_ms = self._acquire_wait_ms
        split = self._replay_log is not None
        limit: int | None = None
        complete = False
        for _ in range(ACQUIRE_ROUNDS_MAX):
            missing = self.ledger.missing(end.spans)
            if missing == 0:
                complete = True
                break
            if not split:
                wanted = missing
            elif limit is None:
                wanted = 1
            else:
                wanted = limit - (end.record_count - missing)
            if wanted <= 0:
                complete = True  # the rest is left for later batches, not lost
                break
            acquired = self._acquire(min(wanted, missing), wait_ms)
            wait_ms = 0
            if split:
                count = self._batch_limit(self._count_hint)
                limit = count if limit is None else min(limit, count)
            if not acquired or self.ledger.missing(end.spans) == missing:
                break  # nothing of the batch came back: the rest is gone
        replay = self.ledger.reclaim(seq=end.seq, spans=end.spans, records_max=limit)
        if self._replay_log is not None and record_count(replay) < end.record_count:
            self._replay_log.save(ShareOffset(seq=end.seq, spans=replay))
        missing = self.ledger.missing(end.spans) - record_count(replay)
        left_out = 0 if complete else missing
        self._archived_unreported += left_out
        log.info(
            "share group %s: replaying batch seq %d of an earlier run: %d of its %d records "
            "(delivery count %d, batch limit %s), %d left out (archived at the delivery "
            "limit, or taken by another consumer), %d left for the next batches",
            self.member.settings.group_id,
            end.seq,
            record_count(replay),
            end.record_count,
            self._count_hint,
            limit,
            left_out,
            end.record_count - record_count(replay) - left_out,
        )
        return replay

    def _acquire(self, records_max: int, wait_ms: int, *, exact: bool = True) -> int:
        """One ShareFetch; returns how many records it acquired that were not handed
        straight back as beyond the AvailableNow bound (fetching again would only
        acquire those again, each time raising their delivery count)."""
        acquired = self.member.acquire(
            records_max=records_max, wait_ms=wait_ms, skip=self.ledger.exhausted, exact=exact
        )
        self.counters["acquired"] += record_count(acquired)
        counts = [s.delivery_count for spans in acquired.values() for s in spans]
        if counts:
            self._count_hint = max(counts)
        admission = self.ledger.admit(acquired)
        if admission.relocked:
            log.warning(
                "share group %s: %d records were handed out again after their lock expired "
                "(a batch ran longer than the lock); they will be delivered again",
                self.member.settings.group_id,
                admission.relocked,
            )
        self._acknowledge(admission.accept, ACCEPT, "ACCEPT (already delivered)")
        self._acknowledge(admission.release, RELEASE, "RELEASE (beyond the AvailableNow end)")
        return admission.pending + record_count(admission.accept)

    def _acknowledge(self, spans: SpanMap, ack_type: AcknowledgeType, what: str) -> None:
        if not spans:
            return
        failed = self.member.acknowledge(spans, ack_type)
        count = record_count(spans)
        self.counters["accepted" if ack_type == ACCEPT else "released"] += count
        for tp, error in sorted(failed.items()):
            self.counters["ackFailed"] += record_count({tp: spans.get(tp, ())})
            log.warning(
                "share group %s: %s of %s-%d %s failed: %s (the group redelivers them)",
                self.member.settings.group_id,
                what,
                tp.topic,
                tp.partition,
                [list(s) for s in spans.get(tp, ())][:8],
                error,
            )

    def _forget_lost(self) -> None:
        lost = self.member.take_lost()
        if lost:
            self.ledger.forget(lost)
