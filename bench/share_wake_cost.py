"""CPU of the share service's part of a woken share consumer cycle, in-process: a
ShareFetch parks in the purgatory, a record is appended and its partition notified (as
Produce does), the woken fetch acquires it and answers, a ShareAcknowledge ACCEPTs it,
and the broker's timer driver makes the passes those requests rearm.

Run from the repository root (PYTHONPATH picks the tree to measure, so two trees can
be compared on the same machine, alternately):

    PYTHONPATH=src .venv/bin/python -m bench.share_wake_cost [--cycles 200] [--repeats 40]

It builds a whole `Broker` without sockets on a manual clock (tests/support/share_rig.py:
topic `t`, share group `g`, member `m1`), starts its timer driver (every source the
running broker has) in an asyncio loop, and runs the cycle through the service's own
entry points (`ShareService.share_fetch`, `share_acknowledge`); the handlers' decode and
encode and the connection are not in it (bench/share_fetch_cost.py measures the cycle at
the wire). The append itself is not measured (it is the Produce's). Reports, per cycle:
CPU microseconds of the fetch (park, notify, woken acquisition, answer), of the
acknowledgement and of the timer passes after them (`time.process_time`, each the best
of `--repeats` repeats of `--cycles`: short repeats, so that the best is one the
machine left alone) and the Python calls counted by `cProfile` over the whole cycle
(deterministic: comparable across trees whatever the load). Results: printed, and JSON
in bench/results/share_wake_cost.json with the date and the machine (`shoal_src`: the tree
measured).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import tempfile
import time
from pathlib import Path

from tests.support.share_rig import ShareRig, manual_broker
from tests.unit.log.batches import append, make_batch

from bench.produce_fetch import machine, save_result
from shoal.protocol.share import AcknowledgeType
from shoal.server.services.share_service import ShareAcknowledgeCall, ShareFetchCall
from shoal.share.acknowledge import AckBatch

ACCEPT = (int(AcknowledgeType.ACCEPT),)


class Cycle:
    """The rig's member as a ShareConsumer in explicit mode: fetch (parked, woken by
    an append), acknowledge what it got."""

    def __init__(self, rig: ShareRig) -> None:
        self.rig = rig
        self.service = rig.broker.share_service
        self.epoch = rig.epoch
        self.log = rig.broker.logs.partition("t", 0)
        assert self.log is not None

    def _next_epoch(self) -> int:
        epoch, self.epoch = self.epoch, self.epoch + 1
        return epoch

    async def run(self, measured: list[float], profile: cProfile.Profile | None) -> None:
        """One cycle; the CPU of its parts is added to `measured`: the fetch (park,
        notify, woken acquisition and answer), the acknowledgement, and the timer
        driver's passes and the loop's turns after them."""
        call = ShareFetchCall(
            group_id="g",
            member_id="m1",
            epoch=self._next_epoch(),
            max_wait_ms=30_000,
            min_bytes=1,
            max_bytes=1 << 20,
            max_records=500,
            batch_size=500,
        )
        if profile is not None:
            profile.enable()
        t0 = time.process_time()
        fetch = asyncio.get_running_loop().create_task(
            self.service.share_fetch(call, connection_id=1)
        )
        await asyncio.sleep(0)  # the fetch runs, finds nothing and parks
        assert not fetch.done(), "the fetch answered without parking"
        t1 = time.process_time()
        if profile is not None:
            profile.disable()
        assert self.log is not None
        append(self.log, make_batch(1))  # the Produce's part: not measured
        if profile is not None:
            profile.enable()
        t2 = time.process_time()
        self.rig.broker.purgatory.notify(("t", 0))
        outcome = await fetch
        t3 = time.process_time()
        assert outcome.error is None, outcome
        acquired = [r for p in outcome.partitions for r in p.acquired]
        assert acquired, "the woken fetch acquired nothing"
        acked = self.service.share_acknowledge(
            ShareAcknowledgeCall(
                group_id="g",
                member_id="m1",
                epoch=self._next_epoch(),
                acknowledgements={
                    self.rig.tp: [AckBatch(r.first_offset, r.last_offset, ACCEPT) for r in acquired]
                },
            )
        )
        t4 = time.process_time()
        assert acked.error is None, acked
        await asyncio.sleep(0)  # the timer driver's pass the requests rearmed
        await asyncio.sleep(0)
        t5 = time.process_time()
        if profile is not None:
            profile.disable()
        measured[0] += (t1 - t0) + (t3 - t2)
        measured[1] += t4 - t3
        measured[2] += t5 - t4


async def _measure(cycle: Cycle, args: argparse.Namespace) -> tuple[list[float], float]:
    cycle.rig.broker.timers.start()
    try:
        for _ in range(args.cycles):  # warm-up
            await cycle.run([0.0, 0.0, 0.0], None)
        best = [float("inf")] * 3
        for _ in range(args.repeats):
            measured = [0.0, 0.0, 0.0]
            for _ in range(args.cycles):
                await cycle.run(measured, None)
            best = [min(b, m * 1e6 / args.cycles) for b, m in zip(best, measured, strict=True)]
        profile = cProfile.Profile()
        for _ in range(args.cycles):
            await cycle.run([0.0, 0.0, 0.0], profile)
        stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        return best, sum(row[1] for row in stats.values()) / args.cycles
    finally:
        await cycle.rig.broker.timers.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=40)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="shoal-share-wake-cost-") as tmp:
        broker = manual_broker(Path(tmp))
        rig = ShareRig(broker)
        rig.acknowledge(AckBatch(10, 14, ACCEPT))  # the rig's held records
        (fetch_us, ack_us, timers_us), calls = asyncio.run(_measure(Cycle(rig), args))
    print(
        f"share service, woken cycle (best of {args.repeats} x {args.cycles}), µs CPU: "
        f"fetch {fetch_us:.0f}, acknowledge {ack_us:.0f}, timer passes {timers_us:.0f}; "
        f"{calls:.0f} Python calls per cycle; load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after"
    )
    result = {
        "settings": vars(args),
        "fetch_us": round(fetch_us),
        "acknowledge_us": round(ack_us),
        "timer_passes_us": round(timers_us),
        "python_calls": round(calls),
        "load": [load_before, os.getloadavg()[0]],
        "machine": machine(),
    }
    print(f"results: {save_result('share_wake_cost', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
