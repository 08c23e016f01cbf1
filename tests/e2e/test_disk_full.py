"""A full disk (docs/design/disk-io.md): the broker's data directory is on a small tmpfs the test
mounts (root only; skipped otherwise). A produce that does not fit gets
KAFKA_STORAGE_ERROR and leaves nothing half-written; a share acknowledgement whose
state write does not fit fails with an error and stays unacknowledged; once space
is freed both succeed again without a restart; a graceful stop on a full disk
completes; and after a restart every acknowledged record and every ACCEPT is there,
with no corrupt batch.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.aio import Connection
from shoal.client.share_requests import acquired_of, partition_errors, share_acknowledge
from shoal.protocol.record_batch import compute_crc, iter_headers
from shoal.protocol.share import AcknowledgeType
from tests.support.batches import build_batch, decode_records
from tests.support.broker import BrokerProcess
from tests.support.share_wire import fetch_now, join, set_group_configs
from tests.support.topics import create_topic, produce, topic_name
from tests.support.wire import call1, fetched, with_connection

DISK_SIZE = "48m"
BIG_VALUE = b"x" * 20_000  # a batch spanning several pages: it cannot fit a page's tail
SHARE_RECORDS = 300


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


@pytest.fixture
def broker(small_disk: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(small_disk / "data", log_path=small_disk.parent / "broker.log")
    process.start()
    try:
        yield process
    finally:
        process.kill()


def _fill(disk: Path) -> Path:
    """Write a filler file until the disk is full; returns it (unlink to free)."""
    filler = disk / "filler"
    chunk = b"\0" * 65536
    with filler.open("wb") as out:
        try:
            while True:
                out.write(chunk)
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def _produce_error(bootstrap: str, topic: str, batch: bytes) -> ErrorCode:
    response = call1(bootstrap, requests.produce({(topic, 0): batch}))
    (result,) = response.responses[0].partition_responses
    return ErrorCode(result.error_code)


def _stored_values(bootstrap: str, topic: str) -> list[bytes | None]:
    partition = fetched(
        call1(
            bootstrap,
            requests.fetch(
                {(topic, 0): requests.FetchPosition(0, 2**24)}, max_bytes=2**25, max_wait_ms=0
            ).build(12),
        )
    )
    stored = bytes(partition.records)
    headers = iter_headers(stored)
    assert sum(h.size for h in headers) == len(stored), "bytes after the last whole batch"
    for header in headers:
        assert compute_crc(stored, header) == header.crc, f"bad CRC at {header.base_offset}"
    records = decode_records(stored)
    assert [r.offset for r in records] == list(range(len(records))), "offsets not contiguous"
    return [r.value for r in records]


def test_produce_on_a_full_disk_is_a_storage_error_and_resumes_when_space_returns(
    broker: BrokerProcess, small_disk: Path
) -> None:
    topic = topic_name("full")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, build_batch([b"before-0", b"before-1"]))
    filler = _fill(small_disk)
    big = build_batch([BIG_VALUE, BIG_VALUE])
    assert _produce_error(broker.bootstrap, topic, big) == ErrorCode.kafka_storage_error
    assert _produce_error(broker.bootstrap, topic, big) == ErrorCode.kafka_storage_error
    assert broker.wait_for_log(r"append on \S+ failed: \[Errno 28\] No space left on device")
    filler.unlink()
    assert produce(broker.bootstrap, topic, build_batch([b"after-0"])) == 2  # no gap, no restart
    expected = [b"before-0", b"before-1", b"after-0"]
    assert _stored_values(broker.bootstrap, topic) == expected

    # a graceful stop on a full disk completes; the next start recovers everything
    filler = _fill(small_disk)
    assert broker.stop() == 0
    assert "not every log closed cleanly (recovered on next start)" in broker.log_text()
    filler.unlink()
    broker.start()
    assert _stored_values(broker.bootstrap, topic) == expected
    assert produce(broker.bootstrap, topic, build_batch([b"restarted"])) == 3


def test_an_acknowledgement_whose_state_write_fails_is_not_lost_or_half_applied(
    broker: BrokerProcess, small_disk: Path
) -> None:
    bootstrap = broker.bootstrap
    topic, group = topic_name("full-share"), topic_name("full-group")
    topic_id = create_topic(bootstrap, topic)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    member = join(bootstrap, group, topic)
    produce(bootstrap, topic, build_batch([b"r%d" % i for i in range(SHARE_RECORDS)]))
    tp = (topic_id, 0)
    accepted: list[int] = []
    failed: dict[int, ErrorCode] = {}

    async def ack_one_by_one(conn: Connection, filler_box: list[Path]) -> None:
        first = await conn.request(fetch_now(group, member, 0, partitions=[tp]).build(1))
        spans = acquired_of(first)
        assert [(s.first, s.last) for s in spans[tp]] == [(0, SHARE_RECORDS - 1)]
        filler_box.append(_fill(small_disk))
        epoch = 1
        for offset in range(SHARE_RECORDS):  # each ACCEPT is a state write
            ack = share_acknowledge(
                group_id=group,
                member_id=member,
                session_epoch=epoch,
                acks={tp: [(offset, offset, (AcknowledgeType.ACCEPT,))]},
            )
            response = await conn.request(ack.build(1))
            epoch += 1
            errors = partition_errors(response)
            if response.error_code != ErrorCode.none or errors:
                failed[offset] = ErrorCode(response.error_code) or next(iter(errors.values()))
                break
            accepted.append(offset)
        filler_box[0].unlink()  # space returns: the failed ACCEPT is retried and succeeds
        offset = next(iter(failed))
        retry = share_acknowledge(
            group_id=group,
            member_id=member,
            session_epoch=epoch,
            acks={tp: [(offset, offset, (AcknowledgeType.ACCEPT,))]},
        )
        response = await conn.request(retry.build(1))
        assert response.error_code == ErrorCode.none and not partition_errors(response)
        accepted.append(offset)

    with_connection(bootstrap, lambda conn: ack_one_by_one(conn, []))
    assert failed, "no state write failed: the disk was never full for the share coordinator"
    assert broker.wait_for_log(r"No space left on device")

    broker.kill()  # a crash: only what was written counts
    broker.start()
    member = join(broker.bootstrap, group, topic)

    async def fetch_rest(conn: Connection) -> list[int]:
        response = await conn.request(fetch_now(group, member, 0, partitions=[tp]).build(1))
        return [o for s in acquired_of(response).get(tp, ()) for o in range(s.first, s.last + 1)]

    redelivered = with_connection(broker.bootstrap, fetch_rest)
    assert redelivered == [o for o in range(SHARE_RECORDS) if o not in set(accepted)]
