"""CPU of one share consumer cycle's core work, in-process: acquire the records of one
produced batch, then acknowledge them (ACCEPT) with the state write to a real
`__share_group_state` log, as a ShareFetch + ShareAcknowledge pair does at a paced
3k records/s (docs/latency.md, 2026-11-27 session 5).

Run from the repository root (PYTHONPATH picks the tree to measure, so two trees can
be compared on the same machine, alternately):

    PYTHONPATH=src .venv/bin/python -m bench.ack_cost [--cycles 3000] [--records 6]

Reports, per cycle: CPU microseconds (`time.process_time`, the best of 40 repeats
of 200 cycles: short repeats, so that the best is one the machine left alone) split
into acquire and acknowledge, and the Python function calls counted by `cProfile`
(deterministic, so comparable across trees whatever the machine's load).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time
import uuid
from pathlib import Path

from tests.support.batches import values_batch

from shoal.clock import ManualClock
from shoal.coordinator.log_sink import LogRecordSink
from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import validate_produced
from shoal.protocol.share import AcknowledgeType, AcquireMode
from shoal.share.acknowledge import AckBatch
from shoal.share.manager import SharePartitionManager
from shoal.share.sessions import TopicIdPartition
from shoal.share.settings import SharePartitionConfig
from shoal.share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from shoal.share_coordinator.records import CODEC
from shoal.share_coordinator.state import SharePartitionKey

GROUP = "bench-group"
TOPIC_ID = uuid.UUID("6c1f9d0c-7d1e-4b69-9d53-2b3f7a5e0c11")
TP = TopicIdPartition(TOPIC_ID, 0)


class Rig:
    """A topic log, a share-partition manager and the share coordinator on real logs."""

    def __init__(self, directory: Path) -> None:
        self.clock = ManualClock()
        self.topic = PartitionLog.open(
            directory=directory / "t-0", config={"retention.ms": -1}, clock=self.clock
        )
        self.state = PartitionLog.open(
            directory=directory / "__share_group_state-0",
            config={"retention.ms": -1},
            clock=self.clock,
        )
        config = SharePartitionConfig()  # the broker keeps each group's config too
        sink = LogRecordSink(log=self.state, encode=CODEC.encode, clock=self.clock)
        self.coordinator = ShareCoordinator(
            sink_for=lambda _partition: sink,
            clock=self.clock,
            settings=ShareCoordinatorSettings(
                num_partitions=1,
                records_per_snapshot=500,
                cold_partition_snapshot_interval_ms=60_000,
            ),
        )
        self.manager = SharePartitionManager(
            clock=self.clock,
            persister=self.coordinator,
            logs=self.lookup,
            config=lambda _group: config,
            auto_offset_reset=lambda _group: "earliest",
        )
        key = SharePartitionKey(GROUP, TOPIC_ID, 0)
        assert self.coordinator.initialize(key=key, state_epoch=0, start_offset=-1) is None

    def lookup(self, topic_id: uuid.UUID, partition: int) -> PartitionLog | ErrorCode:
        if (topic_id, partition) != (TOPIC_ID, 0):
            return ErrorCode.unknown_topic_or_partition
        return self.topic

    def produce(self, records: int) -> None:
        data = values_batch(records, prefix=b"x" * 1000)
        self.topic.append(data, validate_produced(data, max_batch_bytes=1 << 20), leader_epoch=0)

    def acquire(self) -> tuple[int, int]:
        fetched = self.manager.acquire(
            group_id=GROUP,
            member_id="m",
            partitions=(TP,),
            max_records=500,
            batch_size=500,
            max_bytes=50 << 20,
            acquire_mode=AcquireMode.BATCH_OPTIMIZED,
            rotation=0,
        )
        (partition,) = fetched.partitions
        assert partition.acquired, partition
        return partition.acquired[0].first_offset, partition.acquired[-1].last_offset

    def acknowledge(self, first: int, last: int) -> None:
        acked = self.manager.acknowledge(
            group_id=GROUP,
            member_id="m",
            partition=TP,
            batches=(AckBatch(first, last, (int(AcknowledgeType.ACCEPT),)),),
        )
        assert acked.error is None, acked.error

    def close(self) -> None:
        self.topic.abandon()
        self.state.abandon()


def _run(
    rig: Rig, cycles: int, records: int, profile: cProfile.Profile | None = None
) -> tuple[float, float]:
    acquire_s = acknowledge_s = 0.0
    for _ in range(cycles):
        rig.produce(records)  # not measured: the Produce's part
        if profile is not None:
            profile.enable()
        t0 = time.process_time()
        first, last = rig.acquire()
        t1 = time.process_time()
        rig.acknowledge(first, last)
        acknowledge_s += time.process_time() - t1
        acquire_s += t1 - t0
        if profile is not None:
            profile.disable()
    return acquire_s, acknowledge_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=200, help="cycles per repeat")
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--records", type=int, default=6, help="records per produced batch")
    args = parser.parse_args()
    best: tuple[float, float] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        rig = Rig(Path(tmp) / "timed")
        _run(rig, 50, args.records)  # warm: first-use costs out of the figure
        for _ in range(args.repeats):
            acquire_s, acknowledge_s = _run(rig, args.cycles, args.records)
            if best is None or acquire_s + acknowledge_s < sum(best):
                best = (acquire_s, acknowledge_s)
        rig.close()
        rig = Rig(Path(tmp) / "profiled")
        _run(rig, 50, args.records)
        profile = cProfile.Profile()
        _run(rig, 1000, args.records, profile)
        calls = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]
        rig.close()
    assert best is not None
    n = args.cycles
    print(
        f"per cycle ({args.records} records): acquire {best[0] / n * 1e6:.1f} us, "
        f"acknowledge + state write {best[1] / n * 1e6:.1f} us CPU "
        f"(best of {args.repeats} x {n} cycles); "
        f"{calls / 1000:.0f} Python calls; load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
