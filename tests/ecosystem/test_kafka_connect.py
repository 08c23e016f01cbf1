"""Kafka Connect (4.2) in distributed mode runs on Shoal through a worker crash and a
broker crash, its configs, offsets and statuses kept in Shoal's compacted topics.

One worker (`ConnectDistributed`, its REST API on a loopback port) runs a
FileStreamSource connector (a file's lines into a one-partition topic) and a
FileStreamSink connector (that topic's records into another file), both created through
the REST API. The worker keeps connector configs, source offsets and statuses in three
topics it creates compacted (and checks that they are).

What is asserted:

- before any crash, and after a clean stop and restart of the worker with lines appended
  meanwhile, the sink file is exactly the source file: the source resumed from its
  stored offset and the sink from its committed one, so nothing is repeated;
- while lines keep being appended, the worker is SIGKILLed and restarted, then the broker
  is SIGKILLed and restarted on its data directory. The file connectors are at least
  once: the sink then holds every source line in order, except that a crash may replay a
  run of lines written after the last offset commit (`offset.flush.interval.ms`, 1 s
  here): each replay goes back at most `REPLAY_WINDOW` lines, there are at most two per
  crash (the source's re-read, the sink's re-delivery), and no line is missing;
- after each restart the REST API shows both connectors with their configs, running,
  and the source's stored offset (the byte position it has read the file to).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.ecosystem import jvm
from tests.ecosystem.jvm import broker_fixture  # noqa: F401 -- the `broker` fixture
from tests.ecosystem.reading import read_all
from tests.support import kafka_reference
from tests.support.broker import wait_until
from tests.support.clients import create_topic

TOPIC = "lines"
STORAGE_TOPICS = ("connect-configs", "connect-offsets", "connect-status")
FIRST, SECOND = 300, 200
"""Lines before the first start, and appended while the worker is stopped cleanly."""
PACE = (20, 0.4)
"""Lines are then appended in (lines, seconds) steps through both crashes."""
STEPS = 50
REPLAY_WINDOW = 400
"""A replay goes back at most this many lines: offsets are committed every second and
lines are appended at 50 a second, so this is several seconds' worth."""
START_S = 120.0
SETTLE_S = 180.0


def line(number: int) -> str:
    return f"line-{number:06d}"


def make_worker(
    bootstrap: str, tmp_path: Path, name: str = "worker", **extra: str
) -> tuple[jvm.Jvm, Rest]:
    """A worker (not started) with `worker_properties` and the `extra` settings, and its
    REST API; `name` names its files."""
    rest_port = kafka_reference.free_port()
    properties = tmp_path / f"{name}.properties"
    settings = {**worker_properties(bootstrap, rest_port), **extra}
    properties.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    worker = jvm.Jvm(
        "org.apache.kafka.connect.cli.ConnectDistributed",
        [str(properties)],
        class_path=jvm.classpath(),
        log_path=tmp_path / f"{name}.log",
        heap="-Xmx384m",
    )
    return worker, Rest(rest_port)


def worker_properties(bootstrap: str, rest_port: int) -> dict[str, str]:
    settings = {
        "bootstrap.servers": bootstrap,
        "group.id": "connect-cluster",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "config.storage.topic": STORAGE_TOPICS[0],
        "offset.storage.topic": STORAGE_TOPICS[1],
        "status.storage.topic": STORAGE_TOPICS[2],
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "listeners": f"http://127.0.0.1:{rest_port}",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": str(rest_port),
        "offset.flush.interval.ms": "1000",
        # A killed worker's group member (and its sink task's consumer) leaves after 6 s,
        # and its connectors are reassigned at once rather than after 5 minutes.
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "1500",
        "scheduled.rebalance.max.delay.ms": "0",
        "consumer.session.timeout.ms": "6000",
        "consumer.heartbeat.interval.ms": "1500",
    }
    return settings


class Rest:
    """The worker's REST API."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}"
        self.worker_id = f"127.0.0.1:{port}"
        """How the worker names itself in statuses (its advertised REST address)."""

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
        return json.loads(text) if text else None

    def put_config(self, name: str, config: dict[str, str]) -> None:
        """Create (or update) connector `name`, retrying while the worker is still
        starting: its REST server answers 404 before its resources are in place, 409 or
        5xx while it joins its group or reads its config topic."""
        failures: list[str] = []

        def put() -> bool:
            try:
                self.call("PUT", f"/connectors/{name}/config", config)
            except urllib.error.HTTPError as exc:
                if exc.code not in (404, 409) and exc.code < 500:
                    raise
                failures.append(f"{exc.code} {exc.read()[:200]!r}")
                return False
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                failures.append(str(exc))
                return False
            return True

        assert wait_until(put, timeout_s=START_S, interval_s=0.5), failures[-3:]

    def answers(self, path: str) -> Any:
        """GET `path`, or None while the worker is starting or rebalancing."""
        try:
            return self.call("GET", path)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return None


def wait_for_worker(worker: jvm.Jvm, rest: Rest) -> None:
    def up() -> bool:
        assert worker.alive, f"the worker exited:\n{worker.tail()}"
        return rest.answers("/connectors") is not None

    assert wait_until(up, timeout_s=START_S, interval_s=0.5), worker.tail()


def wait_for_running(
    worker: jvm.Jvm, rest: Rest, configs: dict[str, dict[str, str]], *, on: Rest | None = None
) -> None:
    """Each connector and its task RUNNING, with the configs they were given (all on the
    worker of `on`, if given)."""

    def running() -> bool:
        assert worker.alive, f"the worker exited:\n{worker.tail()}"
        listed = rest.answers("/connectors?expand=status&expand=info")
        if listed is None or set(listed) != set(configs):
            return False
        for name, config in configs.items():
            status, info = listed[name]["status"], listed[name]["info"]
            if info["config"] != {**config, "name": name}:
                raise AssertionError(f"{name}'s config came back as {info['config']}")
            states = [status["connector"]["state"], *(t["state"] for t in status["tasks"])]
            if len(states) != 2 or set(states) != {"RUNNING"}:
                return False
            workers = {status["connector"]["worker_id"], *(t["worker_id"] for t in status["tasks"])}
            if on is not None and workers != {on.worker_id}:
                return False
        return True

    assert wait_until(running, timeout_s=START_S, interval_s=0.5), (
        f"connectors not running: {rest.answers('/connectors?expand=status')}\n{worker.tail()}"
    )


def stored_position(rest: Rest, source_file: Path) -> int | None:
    """The source connector's stored offset: how far into the file it has read."""
    offsets = rest.answers("/connectors/source/offsets")
    if offsets is None:
        return None
    for entry in offsets["offsets"]:
        if entry["partition"] == {"filename": str(source_file)}:
            return int(entry["offset"]["position"])
    return None


def sink_committed(rest: Rest) -> int | None:
    """The sink connector's committed offset of the topic's one partition."""
    offsets = rest.answers("/connectors/sink/offsets")
    if offsets is None or not offsets["offsets"]:
        return None
    return int(offsets["offsets"][0]["offset"]["kafka_offset"])


def sink_lines(sink_file: Path) -> list[str]:
    if not sink_file.exists():
        return []
    text = sink_file.read_text()
    # Only whole lines: the sink task may be in the middle of writing one.
    return text[: text.rfind("\n") + 1].splitlines()


def replays(sink: list[str], source: list[str]) -> list[tuple[int, int]]:
    """Checks `sink` is `source` delivered at least once in order: runs of consecutive
    source lines, each starting no later than just past the furthest line delivered so
    far. Returns each replay as (where it went back to, the furthest line before it)."""
    index = {text: i for i, text in enumerate(source)}
    furthest = -1
    found: list[tuple[int, int]] = []
    previous = -1
    for position, text in enumerate(sink):
        assert text in index, f"sink line {position} {text!r} was never in the source"
        at = index[text]
        if at != previous + 1:
            assert at <= furthest, (
                f"sink line {position}: {text!r} after {source[previous]!r} skips lines"
            )
            found.append((at, furthest))
        furthest = max(furthest, at)
        previous = at
    return found


def append(path: Path, numbers: range, *, paced: bool) -> None:
    step, pause = PACE
    for start in range(numbers.start, numbers.stop, step):
        with path.open("a") as out:
            out.writelines(f"{line(n)}\n" for n in range(start, min(start + step, numbers.stop)))
        if paced:
            time.sleep(pause)


def cleanup_policy(bootstrap: str, topic: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    return str(configs["cleanup.policy"].value)


@pytest.mark.timeout(600)
def test_file_connectors_survive_worker_and_broker_crashes(
    broker: jvm.Broker, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, TOPIC, partitions=1)
    source_file, sink_file = tmp_path / "source.txt", tmp_path / "sink.txt"
    append(source_file, range(FIRST), paced=False)
    worker, rest = make_worker(broker.bootstrap, tmp_path)
    configs = {
        "source": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": str(source_file),
            "topic": TOPIC,
            "tasks.max": "1",
        },
        "sink": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(sink_file),
            "topics": TOPIC,
            "tasks.max": "1",
        },
    }
    appender = threading.Thread(
        target=append,
        args=(source_file, range(FIRST + SECOND, FIRST + SECOND + STEPS * PACE[0])),
        kwargs={"paced": True},
    )
    try:
        worker.start()
        wait_for_worker(worker, rest)
        for name, config in configs.items():
            rest.put_config(name, config)
        wait_for_running(worker, rest, configs)
        for topic in STORAGE_TOPICS:
            assert cleanup_policy(broker.bootstrap, topic) == "compact", topic
        source = source_file.read_text().splitlines()
        assert wait_until(lambda: sink_lines(sink_file) == source, timeout_s=SETTLE_S), (
            f"sink has {len(sink_lines(sink_file))} of {len(source)} lines\n{worker.tail()}"
        )

        # A clean stop commits both sides' offsets: after a restart nothing repeats.
        assert worker.stop() in (0, 143), worker.tail()
        append(source_file, range(FIRST, FIRST + SECOND), paced=False)
        worker.start()
        wait_for_worker(worker, rest)
        wait_for_running(worker, rest, configs)
        source = source_file.read_text().splitlines()
        assert wait_until(lambda: sink_lines(sink_file) == source, timeout_s=SETTLE_S), (
            f"after a clean restart the sink is not the source: "
            f"{len(sink_lines(sink_file))} lines for {len(source)}\n{worker.tail()}"
        )
        assert wait_until(
            lambda: stored_position(rest, source_file) == source_file.stat().st_size,
            timeout_s=SETTLE_S,
        ), f"stored offset {stored_position(rest, source_file)}"

        # Lines keep coming; the worker, then the broker, are SIGKILLed.
        appender.start()
        time.sleep(3 * PACE[1])
        worker.kill()
        worker.start()
        wait_for_worker(worker, rest)
        wait_for_running(worker, rest, configs)
        assert appender.is_alive(), "the appends ended before the broker's crash"
        broker.restart()
        appender.join(timeout=120)
        assert not appender.is_alive()

        source = source_file.read_text().splitlines()
        assert wait_until(
            lambda: set(sink_lines(sink_file)) >= set(source), timeout_s=SETTLE_S, interval_s=0.5
        ), f"sink lacks {len(set(source) - set(sink_lines(sink_file)))} lines\n{worker.tail()}"
        wait_for_running(worker, rest, configs)
        assert wait_until(
            lambda: stored_position(rest, source_file) == source_file.stat().st_size,
            timeout_s=SETTLE_S,
        ), f"stored offset {stored_position(rest, source_file)}"
        assert worker.stop() in (0, 143), worker.tail()
    finally:
        worker.kill()
        if appender.is_alive():
            appender.join(timeout=120)

    sink = sink_lines(sink_file)
    found = replays(sink, source)
    assert sink[: FIRST + SECOND] == source[: FIRST + SECOND]
    assert len(found) <= 4, f"more replays than two crashes explain: {found}"
    for back_to, furthest in found:
        assert furthest - back_to < REPLAY_WINDOW, f"a replay went back too far: {found}"
    assert set(sink) == set(source)


@pytest.mark.timeout(600)
def test_exactly_once_source_survives_worker_and_broker_crashes(
    broker: jvm.Broker, tmp_path: Path
) -> None:
    """With `exactly.once.source.support=enabled` the worker writes each source batch and
    its offsets in one transaction, and a restarted worker fences the killed one's task
    producers (Admin fenceProducers) before starting its tasks: a read_committed reader
    of the topic sees every source line exactly once, through the same two crashes."""
    create_topic(broker.bootstrap, TOPIC, partitions=1)
    source_file = tmp_path / "source.txt"
    append(source_file, range(FIRST), paced=False)
    worker, rest = make_worker(
        broker.bootstrap, tmp_path, **{"exactly.once.source.support": "enabled"}
    )
    configs = {
        "source": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": str(source_file),
            "topic": TOPIC,
            "tasks.max": "1",
            "exactly.once.support": "required",
        }
    }
    appender = threading.Thread(
        target=append,
        args=(source_file, range(FIRST, FIRST + STEPS * PACE[0])),
        kwargs={"paced": True},
    )

    def topic_lines(isolation: str) -> list[str]:
        return [value for _key, value in read_all(broker.bootstrap, TOPIC, 1, isolation)[0]]

    try:
        worker.start()
        rest.put_config("source", configs["source"])
        wait_for_running(worker, rest, configs)
        assert wait_until(
            lambda: topic_lines("read_committed") == source_file.read_text().splitlines(),
            timeout_s=SETTLE_S,
            interval_s=0.5,
        ), worker.tail()

        appender.start()
        time.sleep(3 * PACE[1])
        worker.kill()
        worker.start()
        wait_for_running(worker, rest, configs)
        assert appender.is_alive(), "the appends ended before the broker's crash"
        broker.restart()
        appender.join(timeout=120)
        assert not appender.is_alive()

        source = source_file.read_text().splitlines()
        assert wait_until(
            lambda: len(topic_lines("read_committed")) >= len(source),
            timeout_s=SETTLE_S,
            interval_s=0.5,
        ), worker.tail()
        wait_for_running(worker, rest, configs)
        assert wait_until(
            lambda: stored_position(rest, source_file) == source_file.stat().st_size,
            timeout_s=SETTLE_S,
        ), f"stored offset {stored_position(rest, source_file)}"
        assert worker.stop() in (0, 143), worker.tail()
    finally:
        worker.kill()
        if appender.is_alive():
            appender.join(timeout=120)

    assert topic_lines("read_committed") == source


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_workers_share_the_connectors_and_one_takes_over(
    broker: jvm.Broker, tmp_path: Path
) -> None:
    """Two workers in one Connect cluster (one group on Shoal, the leader assigning the
    connectors and tasks, a follower forwarding REST writes to the leader). The worker
    running the source task is SIGKILLed: the other takes over both connectors, the
    source resumes from its stored offset and the sink from its committed one. The killed
    worker comes back and takes its share again. The worker was killed with every offset
    committed and live workers commit before handing a task over, so the sink ends up
    exactly the source."""
    create_topic(broker.bootstrap, TOPIC, partitions=1)
    source_file, sink_file = tmp_path / "source.txt", tmp_path / "sink.txt"
    append(source_file, range(FIRST), paced=False)
    workers = [make_worker(broker.bootstrap, tmp_path, f"worker-{n}") for n in (1, 2)]
    configs = {
        "source": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file": str(source_file),
            "topic": TOPIC,
            "tasks.max": "1",
        },
        "sink": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(sink_file),
            "topics": TOPIC,
            "tasks.max": "1",
        },
    }
    try:
        for worker, _rest in workers:
            worker.start()
        for name, config in configs.items():
            workers[1][1].put_config(name, config)
        for worker, rest in workers:
            wait_for_running(worker, rest, configs)
        source = source_file.read_text().splitlines()
        assert wait_until(lambda: sink_lines(sink_file) == source, timeout_s=SETTLE_S)

        # Both sides' offsets committed: the kill then finds no work in flight.
        _w, rest = workers[0]
        assert wait_until(
            lambda: (
                stored_position(rest, source_file) == source_file.stat().st_size
                and sink_committed(rest) == len(source)
            ),
            timeout_s=SETTLE_S,
        ), f"offsets {stored_position(rest, source_file)}, {sink_committed(rest)}"
        status = rest.call("GET", "/connectors/source/status")
        victim = next(
            n for n, (_w, r) in enumerate(workers) if r.worker_id == status["tasks"][0]["worker_id"]
        )
        survivor_worker, survivor = workers[1 - victim]
        workers[victim][0].kill()
        append(source_file, range(FIRST, FIRST + SECOND), paced=False)
        wait_for_running(survivor_worker, survivor, configs, on=survivor)
        source = source_file.read_text().splitlines()
        assert wait_until(
            lambda: set(sink_lines(sink_file)) >= set(source), timeout_s=SETTLE_S, interval_s=0.5
        ), f"sink lacks {len(set(source) - set(sink_lines(sink_file)))} lines"

        workers[victim][0].start()
        for worker, rest in workers:
            wait_for_running(worker, rest, configs)
        append(source_file, range(FIRST + SECOND, FIRST + 2 * SECOND), paced=False)
        source = source_file.read_text().splitlines()
        assert wait_until(
            lambda: set(sink_lines(sink_file)) >= set(source), timeout_s=SETTLE_S, interval_s=0.5
        ), f"sink lacks {len(set(source) - set(sink_lines(sink_file)))} lines"
        assert wait_until(
            lambda: stored_position(survivor, source_file) == source_file.stat().st_size,
            timeout_s=SETTLE_S,
        ), f"stored offset {stored_position(survivor, source_file)}"
        for worker, _rest in workers:
            assert worker.stop() in (0, 143), worker.tail()
    finally:
        for worker, _rest in workers:
            worker.kill()

    # Nothing was in flight when the worker died, and a task moving between live workers
    # commits first: nothing is repeated.
    assert sink_lines(sink_file) == source
