"""The metadata and config stores' durable writes off the event loop (server/services/disk_io.py:
`write_atomic`, `run` and the change lane) and what the admin handlers answer around
them: a creation or alteration is answered only once its files are durable, the loop
serves others (and its timers run) meanwhile, nobody sees the change before that, two
changes never interleave, and a failed write answers the handler's storage error.

Nothing under test is mocked: the files and fsyncs are real. A gate (fsync_gate.py)
holds every fsync made in a disk worker thread until the test opens it, and counts the
fsyncs made on the loop's thread: a write that wrongly stayed on the loop would never
reach the gate.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shoal import limits
from shoal.client import requests
from shoal.client.calls import Call
from shoal.client.requests import GROUP_RESOURCE, TOPIC_RESOURCE, ConfigChange
from shoal.log.fileio import remove_paths
from shoal.protocol.errors import ErrorCode
from shoal.server.broker import Broker
from shoal.server.connection_info import ConnectionInfo
from shoal.server.context import RequestContext
from shoal.server.metadata.config_resources import ResourceType
from shoal.server.metadata.metadata_log import METADATA_DIR
from shoal.server.services.disk_io import ChangeLane, ChangeLaneFull, DiskIO
from tests.support.metadata import durable_topics, open_metadata
from tests.unit.server.fsync_gate import FsyncGate

LOCK = "share.record.lock.duration.ms"
RESET = "share.auto.offset.reset"


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[FsyncGate]:
    held = FsyncGate()
    monkeypatch.setattr("os.fsync", held.fsync)
    yield held
    held.open()  # never leave a worker blocked, whatever the test did


class Ticker:
    """A timer on the loop: counts its 1 ms ticks (the loop is free while it counts)."""

    def __init__(self) -> None:
        self.ticks = 0
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.001)
            self.ticks += 1

    def stop(self) -> None:
        self._task.cancel()


async def send(broker: Broker, call: Call) -> Any:
    """`call` through the broker's real handler (no socket, every operation allowed)."""
    handler = broker.handlers[call.api_key]
    version = min(call.max_version, handler.max_version)
    ctx = RequestContext(
        services=broker.services,
        connection=ConnectionInfo(1, "127.0.0.1", 5000),
        api_key=call.api_key,
        api_version=version,
        correlation_id=1,
        client_id="store-writes-test",
    )
    return await handler.handle(ctx, call.build(version))


async def held_until_opened(
    gate: FsyncGate, request: Awaitable[Any], *, meanwhile: Callable[[], Awaitable[None]]
) -> Any:
    """Start `request`, wait until its first fsync is held in a worker, check it is not
    answered, run `meanwhile` on the free loop, then open the gate; its answer."""
    task = asyncio.ensure_future(request)
    ticker = Ticker()
    assert await gate.entered_async(1), "the durable write did not run in a disk worker"
    ticks = ticker.ticks
    await meanwhile()
    await asyncio.sleep(0.05)
    assert not task.done(), "answered before its write was durable"
    assert ticker.ticks > ticks, "the loop's timers stopped while the write was held"
    ticker.stop()
    gate.open()
    return await task


# ---- DiskIO.write_atomic and the change lane


def test_writes_of_one_file_never_overlap_and_land_in_order(
    tmp_path: Path, gate: FsyncGate
) -> None:
    path, other = tmp_path / "store.json", tmp_path / "other.json"

    async def scenario() -> None:
        disk = DiskIO()
        first = disk.write_atomic(path, b"first")
        second = disk.write_atomic(path, b"second")
        elsewhere = disk.write_atomic(other, b"elsewhere")
        assert await gate.entered_async(2), "another file's write waits for nothing"
        await asyncio.sleep(0.05)
        assert gate.entered == 2, "the second write of the file started beside the first"
        assert not first.done() and not second.done()
        gate.open()
        await asyncio.gather(first, second, elsewhere)
        await disk.close()

    asyncio.run(scenario())
    assert path.read_bytes() == b"second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.json", "store.json"]
    assert gate.outside == 0


def test_a_failed_write_raises_its_error_and_a_cancelled_waiter_leaves_it_running(
    tmp_path: Path, gate: FsyncGate
) -> None:
    path = tmp_path / "store.json"

    async def scenario() -> None:
        disk = DiskIO()
        abandoned = disk.write_atomic(path, b"kept")
        assert await gate.entered_async(1)
        abandoned.cancel()
        gate.open()
        await disk.close()
        assert path.read_bytes() == b"kept", "the cancelled waiter's write still landed"
        gate.fail = True
        failing = DiskIO()
        with pytest.raises(OSError, match="Input/output error"):
            await failing.write_atomic(path, b"lost")
        await failing.close()

    asyncio.run(scenario())
    assert path.read_bytes() == b"kept"


def test_the_lane_runs_changes_one_at_a_time_in_order_and_each_to_its_end() -> None:
    events: list[str] = []

    def change(name: str, release: asyncio.Event) -> Callable[[], Awaitable[str]]:
        async def run() -> str:
            events.append(f"{name} begins")
            await release.wait()
            events.append(f"{name} ends")
            if name == "bad":
                raise OSError("disk full")
            return name

        return run

    async def scenario() -> None:
        lane = ChangeLane()
        releases = {name: asyncio.Event() for name in ("a", "b", "bad", "c")}
        a = asyncio.ensure_future(lane.run(change("a", releases["a"])))
        b = asyncio.ensure_future(lane.run(change("b", releases["b"])))
        bad = asyncio.ensure_future(lane.run(change("bad", releases["bad"])))
        c = asyncio.ensure_future(lane.run(change("c", releases["c"])))
        await asyncio.sleep(0.01)
        assert events == ["a begins"] and lane.pending == 4
        b.cancel()  # its requester went away: the change still runs, in its turn
        for name in ("c", "bad", "b", "a"):
            releases[name].set()
        assert await a == "a"
        with pytest.raises(asyncio.CancelledError):
            await b
        with pytest.raises(OSError, match="disk full"):
            await bad
        assert await c == "c"
        await lane.idle()
        assert lane.pending == 0

    asyncio.run(scenario())
    assert events == [
        "a begins",
        "a ends",
        "b begins",
        "b ends",
        "bad begins",
        "bad ends",
        "c begins",
        "c ends",
    ]


def test_the_lane_refuses_a_change_past_its_pending_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "ADMIN_CHANGES_PENDING_MAX", 2)
    started: list[str] = []

    def change(name: str, release: asyncio.Event) -> Callable[[], Awaitable[str]]:
        async def run() -> str:
            started.append(name)
            await release.wait()
            return name

        return run

    async def scenario() -> None:
        lane = ChangeLane()
        release = asyncio.Event()
        first = asyncio.ensure_future(lane.run(change("first", release)))
        second = asyncio.ensure_future(lane.run(change("second", release)))
        await asyncio.sleep(0.01)
        with pytest.raises(ChangeLaneFull, match="ADMIN_CHANGES_PENDING_MAX"):
            await asyncio.wait_for(lane.run(change("refused", release)), 5.0)
        release.set()
        assert (await first, await second) == ("first", "second")
        assert await lane.run(change("later", release)) == "later"  # room again

    asyncio.run(scenario())
    assert started == ["first", "second", "later"]


def test_close_waits_for_the_changes_and_writes_in_flight(tmp_path: Path, gate: FsyncGate) -> None:
    path = tmp_path / "store.json"
    adopted: list[bytes] = []

    async def scenario() -> None:
        disk = DiskIO()

        async def change() -> None:
            await disk.write_atomic(path, b"v1")
            adopted.append(b"v1")

        requester = asyncio.ensure_future(disk.changes.run(change))
        assert await gate.entered_async(1)
        requester.cancel()  # the connection closed at shutdown
        closing = asyncio.ensure_future(disk.close())
        await asyncio.sleep(0.05)
        assert not closing.done(), "close returned with a write in flight"
        gate.open()
        await closing

    asyncio.run(scenario())
    assert path.read_bytes() == b"v1" and adopted == [b"v1"]


# ---- the handlers


def topic_error(response: Any) -> int:
    (topic,) = response.topics
    return int(topic.error_code)


def test_create_topics_writes_off_the_loop_and_answers_once_durable(
    broker: Broker, gate: FsyncGate
) -> None:
    async def scenario() -> Any:
        before = gate.outside

        async def meanwhile() -> None:
            unseen = await send(broker, requests.metadata(["fresh"]))
            assert topic_error(unseen) == ErrorCode.unknown_topic_or_partition
            assert broker.logs.topic("fresh") is None

        response = await held_until_opened(
            gate, send(broker, requests.create_topic("fresh", partitions=3)), meanwhile=meanwhile
        )
        assert gate.outside == before, "the creation fsynced on the event loop"
        seen = await send(broker, requests.metadata(["fresh"]))
        await broker.disk.close()
        return response, seen

    response, seen = asyncio.run(scenario())
    assert topic_error(response) == ErrorCode.none
    assert topic_error(seen) == ErrorCode.none
    info = broker.logs.topic("fresh")
    assert info is not None and info.partitions == 3
    assert all(broker.logs.partition("fresh", index) is not None for index in range(3))
    assert "fresh" in durable_topics(broker.metadata)


def test_a_failed_topic_write_answers_kafka_storage_error_and_creates_nothing(
    broker: Broker, gate: FsyncGate
) -> None:
    gate.fail = True
    gate.open()

    async def scenario() -> Any:
        response = await send(broker, requests.create_topic("doomed", partitions=1))
        await broker.disk.close()
        return response

    (topic,) = asyncio.run(scenario()).topics
    assert topic.error_code == ErrorCode.kafka_storage_error
    assert "creating topic doomed" in topic.error_message
    assert broker.logs.topic("doomed") is None


def test_two_creations_of_one_name_take_turns_and_the_second_finds_the_first(
    broker: Broker, gate: FsyncGate, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="shoal.server.handlers.metadata")

    async def scenario() -> tuple[Any, Any]:
        first = asyncio.ensure_future(send(broker, requests.create_topic("twice")))
        assert await gate.entered_async(1)
        second = asyncio.ensure_future(send(broker, requests.create_topic("twice")))
        auto = asyncio.ensure_future(
            send(broker, requests.metadata(["twice"], allow_auto_topic_creation=True))
        )
        await asyncio.sleep(0.05)
        assert not second.done() and not auto.done(), "a change did not wait its turn"
        gate.open()
        answers = await asyncio.gather(first, second, auto)
        await broker.disk.close()
        return answers[1], answers[2]

    second, auto = asyncio.run(scenario())
    assert topic_error(second) == ErrorCode.topic_already_exists
    # The auto-creation found the topic made (Kafka answers it unknown, as any auto-creating one).
    assert topic_error(auto) == ErrorCode.unknown_topic_or_partition
    assert [info.name for info in broker.logs.topics()].count("twice") == 1
    assert "auto-created topic twice" not in caplog.text  # CreateTopics made it
    assert "auto-create topic twice, made meanwhile by an earlier change" in caplog.text


def test_an_auto_creation_first_makes_the_topic_and_the_creation_finds_it(
    broker: Broker, gate: FsyncGate, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="shoal.server.handlers.metadata")

    async def scenario() -> tuple[Any, Any]:
        auto = asyncio.ensure_future(
            send(broker, requests.metadata(["raced"], allow_auto_topic_creation=True))
        )
        assert await gate.entered_async(1)
        creation = asyncio.ensure_future(send(broker, requests.create_topic("raced", partitions=2)))
        await asyncio.sleep(0.05)
        assert not creation.done(), "the creation did not wait for the auto-creation"
        gate.open()
        answers = await asyncio.gather(auto, creation)
        await broker.disk.close()
        return answers[0], answers[1]

    auto, creation = asyncio.run(scenario())
    assert topic_error(auto) == ErrorCode.unknown_topic_or_partition  # as Kafka answers it
    assert topic_error(creation) == ErrorCode.topic_already_exists
    info = broker.logs.topic("raced")
    assert info is not None and info.partitions == 1  # num.partitions, not the creation's 2
    assert "auto-created topic raced (id" in caplog.text


def group_change(*changes: ConfigChange) -> Call:
    return requests.incremental_alter_configs({(GROUP_RESOURCE, "g"): list(changes)})


def test_group_configs_are_written_off_the_loop_and_concurrent_alterations_both_land(
    broker: Broker, gate: FsyncGate
) -> None:
    async def scenario() -> list[Any]:
        before = gate.outside
        first = asyncio.ensure_future(send(broker, group_change(ConfigChange(LOCK, "20000"))))
        assert await gate.entered_async(1)
        assert broker.group_configs.overrides("g") == {}, "adopted before it was durable"
        second = asyncio.ensure_future(send(broker, group_change(ConfigChange(RESET, "earliest"))))
        await asyncio.sleep(0.05)
        assert not first.done() and not second.done()
        gate.open()
        answers = await asyncio.gather(first, second)
        assert gate.outside == before, "the group configs were fsynced on the event loop"
        await broker.disk.close()
        return list(answers)

    for answer in asyncio.run(scenario()):
        assert answer.responses[0].error_code == ErrorCode.none
    assert broker.group_configs.overrides("g") == {LOCK: 20_000, RESET: "earliest"}
    log_dir = broker.config.data_dir / METADATA_DIR
    written = b"".join(p.read_bytes() for p in log_dir.glob("*.log"))
    assert LOCK.encode() in written and RESET.encode() in written


def test_a_failed_config_write_answers_kafka_storage_error_and_changes_nothing(
    broker: Broker, gate: FsyncGate
) -> None:
    gate.fail = True
    gate.open()

    async def scenario() -> tuple[Any, Any]:
        group = await send(broker, group_change(ConfigChange(LOCK, "20000")))
        cluster = await send(
            broker,
            requests.incremental_alter_configs(
                {(int(ResourceType.BROKER), ""): [ConfigChange("num.partitions", "4")]}
            ),
        )
        await broker.disk.close()
        return group, cluster

    group, cluster = asyncio.run(scenario())
    for answer in (group, cluster):
        (response,) = answer.responses
        assert response.error_code == ErrorCode.kafka_storage_error
        assert "could not persist" in response.error_message
    assert broker.group_configs.overrides("g") == {}
    assert broker.config.get_int("num.partitions") == 1


def test_growth_and_topic_configs_are_written_off_the_loop(broker: Broker, gate: FsyncGate) -> None:
    broker.logs.create_topic("grows", partitions=1, configs={})

    async def scenario() -> tuple[Any, Any]:
        before = gate.outside

        async def meanwhile() -> None:
            info = broker.logs.topic("grows")
            assert info is not None and info.partitions == 1, "grown before durable"

        grown = await held_until_opened(
            gate, send(broker, requests.create_partitions({"grows": 3})), meanwhile=meanwhile
        )
        change = ConfigChange("retention.ms", "60000")
        altered = await send(
            broker, requests.incremental_alter_configs({(TOPIC_RESOURCE, "grows"): [change]})
        )
        assert gate.outside == before, "a topic change fsynced on the event loop"
        await broker.disk.close()
        return grown, altered

    grown, altered = asyncio.run(scenario())
    assert grown.results[0].error_code == ErrorCode.none
    assert altered.responses[0].error_code == ErrorCode.none
    info = broker.logs.topic("grows")
    assert info is not None and info.partitions == 3 and info.configs == {"retention.ms": 60_000}
    assert broker.logs.partition("grows", 2) is not None
    reopened = open_metadata(broker.config.data_dir).image  # what is on disk
    assert reopened.config(TOPIC_RESOURCE, "grows") == {"retention.ms": "60000"}


def test_changes_queued_behind_a_change_find_what_the_earlier_ones_left(
    broker: Broker, gate: FsyncGate
) -> None:
    """A DeleteTopics checked against topic id A, queued behind a deletion of A and a
    creation of the name again (id B), must not delete B."""
    old = broker.logs.create_topic("gone", partitions=1, configs={})

    async def scenario() -> list[Any]:
        held = asyncio.ensure_future(send(broker, requests.create_topic("other")))
        assert await gate.entered_async(1)  # the lane is busy with that creation
        queued = [
            asyncio.ensure_future(send(broker, call))
            for call in (
                requests.delete_topics(["gone"]),
                requests.create_topic("gone"),
                requests.delete_topics(["gone"]),
            )
        ]
        await asyncio.sleep(0.05)
        assert broker.logs.topic("gone") is old, "a queued change ran out of turn"
        gate.open()
        answers = await asyncio.gather(held, *queued)
        await broker.disk.close()
        return list(answers[1:])

    deleted, created, late = asyncio.run(scenario())
    assert deleted.responses[0].error_code == ErrorCode.none
    assert topic_error(created) == ErrorCode.none
    assert late.responses[0].error_code == ErrorCode.unknown_topic_or_partition
    again = broker.logs.topic("gone")
    assert again is not None and again.topic_id != old.topic_id


def test_shutdown_finishes_a_change_whose_requester_went_away(
    broker: Broker, gate: FsyncGate
) -> None:
    async def scenario() -> None:
        await broker.start()
        request = asyncio.ensure_future(send(broker, requests.create_topic("late", partitions=2)))
        assert await gate.entered_async(1)
        request.cancel()  # the connection closed mid-request
        stopping = asyncio.ensure_future(broker.shutdown())
        await asyncio.sleep(0.05)
        assert not stopping.done(), "shut down with a change in flight"
        gate.open()
        await stopping

    asyncio.run(scenario())
    assert "late" in open_metadata(broker.config.data_dir).image.topics
    info = broker.logs.topic("late")
    assert info is not None and info.partitions == 2


def test_delete_topics_answers_before_the_files_are_removed(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Kafka answers once the deletion is committed (its files go later): a deleter
    that waited for the removal left the topic gone from Metadata before it heard, so
    a producer's auto-creating Metadata could make it again before its own CreateTopics."""
    broker.logs.create_topic("doomed", partitions=1, configs={})
    release = threading.Event()
    removing = threading.Event()

    def held_removal(paths: Any) -> None:
        removing.set()
        assert release.wait(30)
        remove_paths(paths)

    monkeypatch.setattr("shoal.server.services.disk_io.remove_paths", held_removal)

    def leftovers() -> list[Path]:
        return [p for p in broker.logs.data_dir.iterdir() if p.name.endswith("-delete")]

    async def scenario() -> tuple[Any, Any]:
        try:
            deleted = await asyncio.wait_for(
                send(broker, requests.delete_topics(["doomed"])), timeout=5
            )
            assert removing.is_set(), "the removal did not start in a worker"
            assert leftovers(), "nothing was set aside for removal"
            recreated = await send(broker, requests.create_topic("doomed", partitions=1))
        finally:
            release.set()
        await broker.disk.close()
        return deleted, recreated

    deleted, recreated = asyncio.run(scenario())
    assert deleted.responses[0].error_code == ErrorCode.none
    assert topic_error(recreated) == ErrorCode.none
    assert not leftovers()
