"""The side-by-side benchmark's pure parts (bench/peers/): Redis's version and config,
the RESP command of the recovery fill, the peak sampler, the latency summary, what
the consumer processes saw."""

from __future__ import annotations

import itertools
import time
from array import array
from pathlib import Path
from typing import Any

import pytest
from bench.peers.ops import PeakSampler, resp_command
from bench.peers.procs import Seen, drained, latency_summary
from bench.peers.redis import config_text, upstream_version


def test_upstream_version_drops_the_epoch_and_the_debian_revision() -> None:
    assert upstream_version("5:7.0.15-1~deb12u10") == "7.0.15"
    assert upstream_version("7.0.15-1") == "7.0.15"
    assert upstream_version("7.0.15") == "7.0.15"


def test_redis_config_is_durable_and_loopback_only(tmp_path: Path) -> None:
    text = config_text(tmp_path / "data", 6390, tmp_path / "redis.log")
    lines = dict(line.split(" ", 1) for line in text.splitlines())
    assert lines["bind"] == "127.0.0.1"
    assert lines["protected-mode"] == "yes"
    assert lines["port"] == "6390"
    assert lines["dir"] == str(tmp_path / "data")
    assert lines["appendonly"] == "yes"
    assert lines["appendfsync"] == "everysec"
    assert lines["save"] == '""'
    assert lines["auto-aof-rewrite-percentage"] == "0"


def test_resp_command_is_an_array_of_bulk_strings() -> None:
    assert resp_command(b"XADD", b"t", b"*", b"d", b"\r\n") == (
        b"*5\r\n$4\r\nXADD\r\n$1\r\nt\r\n$1\r\n*\r\n$1\r\nd\r\n$2\r\n\r\n\r\n"
    )


def test_peak_sampler_keeps_the_largest_reading() -> None:
    readings = itertools.chain([5, 9, 3], itertools.repeat(4))
    with PeakSampler(lambda: next(readings), interval_s=0.001) as sampler:
        while sampler.samples < 5:
            time.sleep(0.001)
    assert sampler.peak == 9


def test_latency_summary_in_milliseconds_nearest_rank() -> None:
    latencies = {seq: (1001 - seq) * 1_000_000 for seq in range(1, 1001)}  # 1000..1 ms
    summary = latency_summary(latencies)
    assert summary == {"p50_ms": 500.0, "p99_ms": 990.0, "p999_ms": 999.0, "max_ms": 1000.0}


def test_seen_counts_distinct_records_and_keeps_each_sequences_first_latency() -> None:
    def out(keys: list[int], seqs: list[int], latencies: list[int]) -> dict[str, bytes]:
        return {
            "keys": array("q", keys).tobytes(),
            "seqs": array("q", seqs).tobytes(),
            "latencies": array("q", latencies).tobytes(),
        }

    seen = Seen([out([1, 2], [0, 1], [5, 7]), out([2, 3], [1, 2], [9, 4])])
    assert (seen.unique, seen.duplicates) == (3, 1)
    assert seen.latency_by_seq == {0: 5, 1: 7, 2: 4}
    assert seen.counts(3) == {"received": 3, "duplicates": 1}
    with pytest.raises(RuntimeError, match="1 of 4 records never arrived"):
        seen.counts(4)
    by_seq = Seen([{"seqs": array("q", [4, 4]).tobytes(), "latencies": b""}], key="seqs")
    assert (by_seq.unique, by_seq.duplicates, by_seq.latency_by_seq) == (1, 1, {})


def test_drained_times_from_the_start_to_the_last_record_of_any_consumer() -> None:
    def out(keys: list[int], first: int, last: int, cpu_s: float) -> dict[str, Any]:
        return {
            "keys": array("q", keys).tobytes(),
            "count": len(keys),
            "bytes": 100 * len(keys),
            "first": first,
            "last": last,
            "cpu_s": cpu_s,
        }

    outs = [out([1, 2, 3], 3_000_000_000, 4_000_000_000, 0.5), out([], 0, 0, 0.25)]
    result = drained(outs, 3, Seen(outs), began=2_000_000_000)
    assert result["seconds"] == 2.0 and result["records_per_s"] == 1.5
    assert result["mb_per_s"] == 3 * 100 / 1e6 / 2.0
    assert result["first_s"] == 1.0
    assert result["per_consumer"] == [3, 0] and result["consumers"] == 2
    assert result["client_cpu_s"] == 0.75
    assert (result["received"], result["duplicates"]) == (3, 0)
    with pytest.raises(RuntimeError, match="never arrived"):
        drained(outs, 4, Seen(outs), began=0)
