"""`SharePartitionManager.acquire` of one partition (`_acquire_single`, the share
consumer's usual session) answers exactly as the general path (`_acquire_many`) does:
two managers over equal logs take the same steps, one through each path, and every
answer, wake-up and resulting share-partition state must be equal."""

from __future__ import annotations

from dataclasses import replace

from shoal.protocol.share import AcquireMode
from shoal.share.manager import ShareFetchPartition
from shoal.share.sessions import TopicIdPartition
from tests.unit.share.support import ack, view
from tests.unit.share.test_manager import GROUP, P0, Q0, RELEASE, Rig


class Pair:
    """The same rig twice: `fast` acquires through `acquire`, `reference` through
    `_acquire_many` with the one partition."""

    def __init__(self, **config: object) -> None:
        self.fast, self.reference = Rig(), Rig()
        for rig in self.rigs:
            rig.config = replace(rig.config, **config)  # type: ignore[arg-type]
            rig.topic(P0)

    @property
    def rigs(self) -> tuple[Rig, Rig]:
        return self.fast, self.reference

    def append(self, count: int) -> None:
        for rig in self.rigs:
            rig.logs[P0].append(count)

    def fetch(
        self,
        member: str,
        tp: TopicIdPartition = P0,
        *,
        max_records: int = 500,
        batch_size: int = 500,
        max_bytes: int = 1 << 20,
        mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
    ) -> list[ShareFetchPartition]:
        fast = self.fast.fetch(
            member,
            tp,
            max_records=max_records,
            batch_size=batch_size,
            max_bytes=max_bytes,
            mode=mode,
        )
        manager = self.reference.manager
        reference = manager._acquire_many(
            GROUP,
            member,
            (tp,),
            self.reference.config,
            max_records=max_records,
            batch_size=batch_size,
            max_bytes=max_bytes,
            acquire_mode=mode,
            rotation=0,
            load_errors=manager.load_missing(GROUP, (tp,)),
        )
        reference = manager.run(reference)
        self.reference.effects(reference.effects)
        reference = reference.partitions
        assert fast == reference
        assert self.fast.woken == self.reference.woken
        fast_sp, reference_sp = (rig.manager.get(rig.key()) for rig in self.rigs)
        assert (fast_sp is None) == (reference_sp is None)
        if fast_sp is not None and reference_sp is not None:
            assert view(fast_sp) == view(reference_sp)
            assert fast_sp.start_offset == reference_sp.start_offset
            assert fast_sp.deadlines() == reference_sp.deadlines()
        return fast

    def ack(self, member: str, *batches: object) -> None:
        for rig in self.rigs:
            assert rig.ack(member, P0, *batches) is None  # type: ignore[arg-type]


def test_single_partition_path_matches_the_general_one() -> None:
    pair = Pair()
    assert pair.fetch("m1") == [ShareFetchPartition(P0)]  # loads; nothing yet
    pair.append(3)
    pair.append(4)
    (got,) = pair.fetch("m1", batch_size=3)
    assert got.count == 7 and got.records
    assert pair.fetch("m2") == [ShareFetchPartition(P0)]  # all acquired
    pair.ack("m1", ack(0, 1, RELEASE))
    assert pair.fetch("m2", max_records=1)[0].count >= 1
    pair.append(5)
    assert pair.fetch("m2", mode=AcquireMode.RECORD_LIMIT, max_records=2)[0].count == 2
    assert pair.fetch("m3", max_bytes=0) == [ShareFetchPartition(P0)]
    assert pair.fetch("m3", max_records=0) == [ShareFetchPartition(P0)]
    assert pair.fetch("m3", max_bytes=1)[0].count > 0  # the first batch goes out whole


def test_single_partition_errors_and_limits_match_the_general_one() -> None:
    pair = Pair(max_record_locks=4)
    (missing,) = pair.fetch("m1", Q0)
    assert missing.error is not None
    pair.append(3)
    pair.append(3)
    assert pair.fetch("m1")[0].count == 6  # the in-flight limit stretches to the batch
    pair.append(2)
    assert pair.fetch("m2") == [ShareFetchPartition(P0)]  # window full
    paused = Pair(delivery_paused=True)
    paused.append(2)
    assert paused.fetch("m1") == [ShareFetchPartition(P0)]
