"""One broker per data directory (server/services/data_dir_lock.py): a second `shoal serve` on a
directory in use stops at start-up, before it reads or writes there; a SIGKILLed
broker's lock goes with its process, so a restart works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from shoal.client import requests
from tests.support.batches import decode_records, values_batch
from tests.support.broker import BrokerProcess, Brokers
from tests.support.topics import create_topic, produce, topic_name
from tests.support.wire import call1, fetched, log_end_offset

START_TIMEOUT_S = 60


def files(data_dir: Path) -> dict[str, tuple[int, int]]:
    """Every file under the data directory: (size, modification time in ns)."""
    return {
        str(path.relative_to(data_dir)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(data_dir.rglob("*"))
        if path.is_file()
    }


def second_serve(data_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "shoal.cli.main",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--data-dir",
            str(data_dir),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        check=False,
    )


def read_values(bootstrap: str, topic: str) -> list[bytes | None]:
    position = requests.FetchPosition(0, 2**20)
    response = call1(bootstrap, requests.fetch({(topic, 0): position}, max_wait_ms=0))
    return [record.value for record in decode_records(bytes(fetched(response).records))]


def test_second_serve_on_a_directory_in_use_is_refused(brokers: Brokers) -> None:
    first = brokers.start()
    topic = topic_name("locked")
    create_topic(first.bootstrap, topic)
    produce(first.bootstrap, topic, values_batch(2))
    before = files(first.data_dir)

    refused = second_serve(first.data_dir)

    assert refused.returncode == 1, refused.stderr
    assert f"data directory {first.data_dir.resolve()} is in use" in refused.stderr
    assert f"process {first.pid} holds its lock" in refused.stderr
    assert "listening on" not in refused.stderr
    assert files(first.data_dir) == before, "the refused process wrote to the directory"
    # The first broker keeps serving, its data as it was.
    assert first.alive
    produce(first.bootstrap, topic, values_batch(1, prefix=b"w"))
    assert read_values(first.bootstrap, topic) == [b"v0", b"v1", b"w0"]


def test_restart_after_sigkill_takes_the_lock_again(brokers: Brokers) -> None:
    broker: BrokerProcess = brokers.start()
    topic = topic_name("relocked")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, values_batch(1, prefix=b"kept"))
    broker.kill()
    broker.start()  # the same directory: the killed process's lock is gone
    assert broker.wait_for_log(r"locked data directory") is not None
    assert log_end_offset(broker.bootstrap, topic, 0) == 1
    assert read_values(broker.bootstrap, topic) == [b"kept0"]
    # and the restarted broker holds it in turn
    refused = second_serve(broker.data_dir)
    assert refused.returncode == 1
    assert f"process {broker.pid} holds its lock" in refused.stderr


def test_another_nodes_data_directory_is_refused_in_one_line(brokers: Brokers) -> None:
    """A data directory whose meta.properties names another node.id stops start-up with
    the reason and exit status 1, not a traceback, and leaves the directory as it was."""
    first = brokers.start()
    topic = topic_name("other-node")
    create_topic(first.bootstrap, topic)
    assert first.stop() == 0
    before = files(first.data_dir)

    refused = second_serve(first.data_dir, "--node-id", "7")

    assert refused.returncode == 1, refused.stderr
    assert "cannot start: node.id 7 is configured but" in refused.stderr, refused.stderr
    assert "holds node.id 1" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr, refused.stderr
    assert "listening on" not in refused.stderr
    # It took the directory's lock (and wrote its PID there), then opened nothing.
    after = files(first.data_dir)
    assert {k: v for k, v in after.items() if k != ".lock"} == {
        k: v for k, v in before.items() if k != ".lock"
    }, "the refused process wrote to the directory"
