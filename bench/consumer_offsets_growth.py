"""Size of `__consumer_offsets` under steady offset commits (it must stay
bounded: the group coordinator prunes it).

Run from the repository root:

    .venv/bin/python -m bench.consumer_offsets_growth                 # 60 s at 1k commits/s
    .venv/bin/python -m bench.consumer_offsets_growth --seconds 3600  # an hour
    .venv/bin/python -m bench.consumer_offsets_growth --seconds 20 --prune-interval-ms 2000

The script starts its own broker (tests/support/broker.py) on a temporary data
directory, with the broker's defaults unless told otherwise (`offsets.topic.*`:
50 partitions, 100 MiB segments, a maintenance pass every
`offsets.topic.prune.interval.ms` = 30 s and after every
`offsets.topic.rewrite.window.records` = 10 000 appended records, that re-writes keys
more than a window below their partition's end and deletes what no live key needs).
`--segment-bytes` sets smaller segments so the disk figure follows the log start
offset at this scale (only whole segments are removed; the default 1 MiB is smaller
than the broker's default for that reason).

One confluent-kafka Consumer per group (`--groups`, default 1: every commit lands
on one partition, the worst case) commits one offset per OffsetCommit, round-robin
over the `--partitions` partitions of one topic (default 100), paced at `--rate`
commits/s (default 1000; asynchronous commits, so the pace is the client's, not one
round trip's). Every `--sample-s` seconds the script records: commits acknowledged
so far, records ever written to `__consumer_offsets` (sum of high watermarks),
records retained (high - low watermark, by ListOffsets) and bytes of its segment
files on disk. Without the bound the retained count would track the commits; with
it it stays below twice the live keys + two windows.

Results: an aligned table on stdout and JSON in
bench/results/consumer_offsets_growth.json with machine information. Figures
measured on a shared machine are noisy; the retained record count is not.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic

from bench.produce_fetch import machine, save_result

OFFSETS_TOPIC = "__consumer_offsets"
TOPIC = "bench-commits"


class Committer:
    """A Consumer committing explicit offsets asynchronously, counting the acks."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.acked = 0
        self.failed = 0
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "on_commit": self._on_commit,
            }
        )

    def _on_commit(self, error: KafkaError | None, partitions: list[TopicPartition]) -> None:
        if error is not None or any(tp.error is not None for tp in partitions):
            self.failed += 1
        else:
            self.acked += 1

    def commit(self, partition: int, offset: int) -> None:
        self.consumer.commit(offsets=[TopicPartition(TOPIC, partition, offset)], asynchronous=True)
        self.consumer.poll(0)

    def drain(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.consumer.poll(0.05)


def log_sample(probe: Consumer, data_dir: Path, partitions: int) -> tuple[int, int, int]:
    """(records ever written, records retained, bytes on disk) of `__consumer_offsets`."""
    written = retained = 0
    for partition in range(partitions):
        low, high = probe.get_watermark_offsets(
            TopicPartition(OFFSETS_TOPIC, partition), timeout=30, cached=False
        )
        written += high
        retained += high - low
    on_disk = sum(path.stat().st_size for path in data_dir.glob(f"{OFFSETS_TOPIC}-*/*.log"))
    return written, retained, on_disk


def run(args: argparse.Namespace) -> dict[str, Any]:
    overrides = [f"offsets.topic.segment.bytes={args.segment_bytes}"]
    if args.prune_interval_ms is not None:
        overrides.append(f"offsets.topic.prune.interval.ms={args.prune_interval_ms}")
    if args.window_records is not None:
        overrides.append(f"offsets.topic.rewrite.window.records={args.window_records}")
    samples: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="shoal-bench-") as tmp:
        data_dir = Path(tmp) / "data"
        broker = BrokerProcess(data_dir, overrides=overrides).start()
        try:
            create_topic(broker.bootstrap, TOPIC, partitions=args.partitions)
            committers = [Committer(broker.bootstrap, f"bench-g{i}") for i in range(args.groups)]
            probe = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "bench-probe"})
            for committer in committers:  # find the coordinator before the clock starts
                committer.commit(0, 0)
                committer.drain(1.0)
            offsets_partitions = len(
                probe.list_topics(OFFSETS_TOPIC, timeout=30).topics[OFFSETS_TOPIC].partitions
            )
            print(f"{'t_s':>6} {'commits':>9} {'written':>9} {'retained':>9} {'disk_kib':>9}")
            started = time.monotonic()
            next_sample = started
            sent = 0
            while True:
                now = time.monotonic()
                elapsed = now - started
                if now >= next_sample:
                    written, retained, on_disk = log_sample(probe, data_dir, offsets_partitions)
                    acked = sum(c.acked for c in committers)
                    samples.append(
                        {
                            "t_s": round(elapsed, 1),
                            "commits_acked": acked,
                            "records_written": written,
                            "records_retained": retained,
                            "bytes_on_disk": on_disk,
                        }
                    )
                    print(
                        f"{elapsed:6.0f} {acked:9d} {written:9d} {retained:9d} "
                        f"{on_disk // 1024:9d}",
                        flush=True,
                    )
                    next_sample += args.sample_s
                if elapsed >= args.seconds:
                    break
                due = int(elapsed * args.rate)
                while sent < due:
                    committer = committers[sent % len(committers)]
                    committer.commit(sent % args.partitions, sent)
                    sent += 1
                time.sleep(0.001)
            for committer in committers:
                committer.drain(2.0)
            written, retained, on_disk = log_sample(probe, data_dir, offsets_partitions)
            probe.close()
            for committer in committers:
                committer.consumer.close()
        finally:
            broker.stop()
    acked = sum(c.acked for c in committers)
    result = {
        "bench": "consumer_offsets_growth",
        "note": "measured on a machine shared with other engineers' test runs: rates are noisy",
        "settings": {
            "seconds": args.seconds,
            "rate_target": args.rate,
            "groups": args.groups,
            "topic_partitions": args.partitions,
            "broker_overrides": overrides,
        },
        "commits_sent": sent,
        "commits_acked": acked,
        "commits_failed": sum(c.failed for c in committers),
        "commit_rate_achieved": round(acked / args.seconds, 1),
        "final": {"records_written": written, "records_retained": retained, "bytes": on_disk},
        "max_records_retained": max(s["records_retained"] for s in samples),
        "samples": samples,
        "machine": machine(),
    }
    path = save_result("consumer_offsets_growth", result)
    print(
        f"{acked} commits ({result['commit_rate_achieved']}/s), {written} records written, "
        f"{retained} retained at the end (max {result['max_records_retained']}); {path}"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="3600: an hour")
    parser.add_argument("--rate", type=float, default=1000.0, help="commits per second")
    parser.add_argument("--groups", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=100, help="of the committed topic")
    parser.add_argument("--sample-s", type=float, default=5.0)
    parser.add_argument("--segment-bytes", type=int, default=1_048_576)
    parser.add_argument("--prune-interval-ms", type=int, default=None, help="broker default")
    parser.add_argument("--window-records", type=int, default=None, help="broker default")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
