"""CPU of one share consumer cycle's core work, in-process: acquire the records of one
produced batch, then acknowledge them (ACCEPT) with the state write to a real
`__share_group_state` log, as a ShareFetch + ShareAcknowledge pair does at a paced
3k records/s (docs/performance/latency.md, "The changes that mattered").

Run from the repository root (PYTHONPATH picks the tree to measure, so two trees can
be compared on the same machine, alternately):

    PYTHONPATH=src .venv/bin/python -m bench.ack_cost [--cycles 3000] [--records 6]

Reports, per cycle: CPU microseconds (`time.process_time`, the best of 40 repeats
of 200 cycles: short repeats, so that the best is one the machine left alone) split
into acquire and acknowledge, and the Python function calls counted by `cProfile`
(deterministic, so comparable across trees whatever the machine's load).

`--handler` measures the whole ShareAcknowledge instead: the broker's handler (API 79
v2: session, authorization, the acknowledgement and its state write, the wake-up
decision, the response) and the response's encoding, on a `Broker` built on a manual
clock without a socket (tests/support/share_rig.py), one ACCEPT of a 2-record batch
per cycle, as the peers harness's consumers send at a paced 1k-3k records/s. What
stays out is the shell's part (frame read, request decode, socket write).

Results: printed, and JSON in bench/results/ack_cost.json (either mode; the settings say
which) with the date and the machine (`shoal_src`: the tree measured).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time
import uuid
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from kio.schema.share_acknowledge.v2.request import (
    AcknowledgementBatch,
    AcknowledgePartition,
    AcknowledgeTopic,
    ShareAcknowledgeRequest,
)
from kio.static.primitive import i8, i32, i64
from tests.support.batches import values_batch
from tests.support.share_rig import ShareRig, manual_broker

from bench.produce_fetch import machine, save_result
from shoal.clock import ManualClock
from shoal.coordinator.log_sink import LogRecordSink
from shoal.log.partition import PartitionLog
from shoal.protocol import codec
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import validate_produced
from shoal.protocol.share import AcknowledgeType, AcquireMode
from shoal.server.connection_info import ConnectionInfo
from shoal.server.context import RequestContext
from shoal.share.acknowledge import AckBatch
from shoal.share.leader_settings import SharePartitionConfig
from shoal.share.sessions import TopicIdPartition
from shoal.share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from shoal.share_coordinator.records import CODEC
from shoal.share_coordinator.state import SharePartitionKey
from shoal.sim.share_leader import DrivenManager

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
        config = SharePartitionConfig(auto_offset_reset="earliest")  # resolved per group
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
        self.manager = DrivenManager(
            clock=self.clock,
            logs=self.lookup,
            persister=self.coordinator,
            settings_for=lambda _group: config,
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


class HandlerRig:
    """The ShareAcknowledge handler of an in-process broker (module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.broker = manual_broker(directory)
        self.broker.group_service.start()
        self.share = ShareRig(self.broker)  # member m1 holds offsets 10-14
        self.share.acknowledge(AckBatch(10, 14, (int(AcknowledgeType.ACCEPT),)))
        self.next_offset = 15
        self.handler = self.broker.handlers[ShareAcknowledgeRequest.__api_key__]
        self.connection = ConnectionInfo(1, "127.0.0.1", 5000)

    def cycle(self, profile: cProfile.Profile | None = None) -> float:
        """Produce and acquire 2 records (not measured), then acknowledge them through
        the handler and encode its response; returns the CPU seconds of the latter."""
        self.share.produce(2)
        acquired = self.share.fetch()
        first, last = self.next_offset, self.next_offset + acquired - 1
        self.next_offset = last + 1
        request = ShareAcknowledgeRequest(
            group_id="g",
            member_id="m1",
            share_session_epoch=i32(self.share.epoch),
            topics=(
                AcknowledgeTopic(
                    topic_id=self.share.tp.topic_id,
                    partitions=(
                        AcknowledgePartition(
                            partition_index=i32(0),
                            acknowledgement_batches=(
                                AcknowledgementBatch(
                                    first_offset=i64(first),
                                    last_offset=i64(last),
                                    acknowledge_types=(i8(int(AcknowledgeType.ACCEPT)),),
                                ),
                            ),
                        ),
                    ),
                ),
            ),
        )
        ctx = RequestContext(
            services=self.broker.services,
            connection=self.connection,
            api_key=int(ShareAcknowledgeRequest.__api_key__),
            api_version=int(ShareAcknowledgeRequest.__version__),
            correlation_id=1,
            client_id="bench",
        )
        if profile is not None:
            profile.enable()
        t0 = time.process_time()
        response = _run_unsuspended(self.handler.handle(ctx, request))
        codec.encode_response(ctx.api_key, ctx.api_version, 1, response)
        elapsed = time.process_time() - t0
        if profile is not None:
            profile.disable()
        self.share.epoch += 1
        assert response.error_code == 0, response
        assert response.responses[0].partitions[0].error_code == 0, response
        return elapsed

    def close(self) -> None:
        self.broker.logs.close()


def _run_unsuspended(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a handler that never waits (an acknowledgement with no state linger) to its
    end without an event loop, whose own cost would swamp the figure."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    coroutine.close()
    raise AssertionError("the handler waited")


def _handler_main(repeats: int, cycles: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        rig = HandlerRig(Path(tmp))
        for _ in range(300):  # warm
            rig.cycle()
        best = min(sum(rig.cycle() for _ in range(cycles)) for _ in range(repeats))
        profile = cProfile.Profile()
        for _ in range(1000):
            rig.cycle(profile)
        calls = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]
        rig.close()
    print(
        f"ShareAcknowledge handler + response encoding: {best / cycles * 1e6:.1f} us CPU "
        f"(best of {repeats} x {cycles} cycles); {calls / 1000:.0f} Python calls; "
        f"load {os.getloadavg()[0]:.1f}"
    )
    return {"handler_us": round(best / cycles * 1e6, 1), "python_calls": round(calls / 1000)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=200, help="cycles per repeat")
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--records", type=int, default=6, help="records per produced batch")
    parser.add_argument(
        "--handler", action="store_true", help="the whole ShareAcknowledge handler instead"
    )
    args = parser.parse_args()
    settings = dict(vars(args))
    if args.handler:
        figures = _handler_main(args.repeats, args.cycles)
        out = save_result("ack_cost", {"settings": settings, **figures, "machine": machine()})
        print(f"results: {out}")
        return
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
    result = {
        "settings": settings,
        "acquire_us": round(best[0] / n * 1e6, 1),
        "acknowledge_and_state_write_us": round(best[1] / n * 1e6, 1),
        "python_calls": round(calls / 1000),
        "machine": machine(),
    }
    print(f"results: {save_result('ack_cost', result)}")


if __name__ == "__main__":
    main()
