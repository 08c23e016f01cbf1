"""`shoal serve` as an operator runs it: config validation at start, `--config FILE`,
graceful SIGTERM, and the connection limit."""

from __future__ import annotations

import pstats
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.broker import BrokerProcess, Brokers, wait_until
from tests.support.clients import (
    create_topic,
    flush_all,
    partition_count,
    producer,
    read_partitions,
    watermarks,
)
from tests.support.topics import topic_name

START_BOUND_S = 30.0
SHUTDOWN_TIMEOUT_S = 5.0  # shoal.shutdown.timeout.ms default


def _serve(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "shoal.cli.main", "serve", "--port", "0"]
    command += ["--data-dir", str(tmp_path / "data"), *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=START_BOUND_S, check=False
    )


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("no.such.key=1", "no.such.key"),
        ("num.partitions=0", "num.partitions"),
        ("max.connections=-3", "max.connections"),
        ("auto.create.topics.enable=maybe", "auto.create.topics.enable"),
    ],
)
def test_invalid_config_refused_at_start(tmp_path: Path, override: str, key: str) -> None:
    result = _serve(tmp_path, "--override", override)
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert key in result.stderr, result.stderr
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())


def test_invalid_config_file_refused(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text("num.partitions=2\nlog.segment.bytes=lots\n")
    result = _serve(tmp_path, "--config", str(config))
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "log.segment.bytes" in result.stderr, result.stderr


def test_config_file_is_honoured(tmp_path: Path, brokers: Brokers) -> None:
    config = tmp_path / "server.properties"
    config.write_text("# as Kafka writes it\nnum.partitions=4\nauto.create.topics.enable=true\n")
    broker = brokers.start(config_file=config)
    topic = topic_name("auto-created")
    p = producer(broker.bootstrap)
    p.produce(topic, value=b"first")  # Metadata for an unknown topic creates it
    flush_all(p, timeout_s=30)
    assert partition_count(broker.bootstrap, topic) == 4


def test_override_beats_config_file(tmp_path: Path, brokers: Brokers) -> None:
    config = tmp_path / "server.properties"
    config.write_text("num.partitions=4\n")
    broker = brokers.start("num.partitions=2", config_file=config)
    topic = topic_name("auto-created")
    p = producer(broker.bootstrap)
    p.produce(topic, value=b"first")
    flush_all(p, timeout_s=30)
    assert partition_count(broker.bootstrap, topic) == 2


def test_sigterm_shuts_down_gracefully(fresh_broker: BrokerProcess) -> None:
    topic = topic_name("graceful")
    create_topic(fresh_broker.bootstrap, topic, partitions=2)
    p: Producer = producer(fresh_broker.bootstrap)
    for i in range(1_000):
        p.produce(topic, key=b"%d" % i, value=b"value-%d" % i)
    flush_all(p)

    # The producer stays connected (idle) while the broker shuts down.
    started = time.monotonic()
    assert fresh_broker.stop() == 0
    shutdown_s = time.monotonic() - started
    log = fresh_broker.log_text()
    assert "shutdown complete" in log
    during_shutdown = log[log.find("shutting down") :]
    assert " ERROR " not in during_shutdown, during_shutdown
    assert shutdown_s < SHUTDOWN_TIMEOUT_S, (
        f"shutdown with an idle client took {shutdown_s:.1f} s: idle connections should "
        "close at once, not wait out shoal.shutdown.timeout.ms"
    )

    fresh_broker.start()
    ends = {q: high for q, (_, high) in watermarks(fresh_broker.bootstrap, topic, 2).items()}
    assert sum(ends.values()) == 1_000
    consumed = read_partitions(fresh_broker.bootstrap, topic, ends)
    values = sorted(m.value or b"" for ms in consumed.values() for m in ms)
    assert values == sorted(b"value-%d" % i for i in range(1_000))


def _api_versions_v0(sock: socket.socket) -> bool:
    """Send ApiVersions v0 and read the answer; False if the broker closed instead."""
    header = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
    try:
        sock.sendall(struct.pack(">i", len(header)) + header)
        size_bytes = sock.recv(4, socket.MSG_WAITALL)
        if len(size_bytes) < 4:
            return False
        (size,) = struct.unpack(">i", size_bytes)
        return len(sock.recv(size, socket.MSG_WAITALL)) == size
    except (ConnectionResetError, BrokenPipeError):
        return False


def test_max_connections(brokers: Brokers) -> None:
    broker = brokers.start("max.connections=3")
    host, _, port = broker.bootstrap.rpartition(":")
    admitted = [socket.create_connection((host, int(port)), timeout=10) for _ in range(3)]
    extra: list[socket.socket] = []
    try:
        for sock in admitted:
            assert _api_versions_v0(sock), "one of the first three connections was refused"
        fourth = socket.create_connection((host, int(port)), timeout=10)
        extra.append(fourth)
        assert not _api_versions_v0(fourth), "the fourth connection was served"
        assert broker.wait_for_log(r"max\.connections=3"), "no log line says why it was closed"
        for sock in admitted:
            assert _api_versions_v0(sock), "an admitted connection stopped working"

        # Closing one frees its slot (once the broker has noticed).
        admitted.pop().close()

        def slot_free() -> bool:
            sock = socket.create_connection((host, int(port)), timeout=10)
            extra.append(sock)
            return _api_versions_v0(sock)

        assert wait_until(slot_free, timeout_s=10, interval_s=0.1)
    finally:
        for sock in admitted + extra:
            sock.close()


def test_shoal_profile_writes_cprofile_statistics_on_stop(
    tmp_path: Path, brokers: Brokers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SHOAL_PROFILE=PATH (for benchmarks): the broker runs under cProfile and writes
    statistics that name its request handlers when it stops."""
    stats_path = tmp_path / "broker.pstats"
    monkeypatch.setenv("SHOAL_PROFILE", str(stats_path))
    broker = brokers.start()
    monkeypatch.delenv("SHOAL_PROFILE")
    create_topic(broker.bootstrap, topic_name("profiled"))
    assert broker.stop() == 0
    functions = {name for _, _, name in pstats.Stats(str(stats_path)).stats}  # type: ignore[attr-defined]
    assert "run_broker" in functions
