"""The DLQ shell (server/services/share_dlq.py) on a real log, a ShareService and an in-memory
persister, with the crash windows forced deterministically: a copy is written once
whether the broker dies before the copy or between the copy and the ARCHIVED write,
and a topic that may not serve as a DLQ gets nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import io
import logging
from pathlib import Path
from typing import Any

import pytest
from kio.records.readers import read_batch
from kio.records.schema import NewRecordBatch, RecordHeader
from kio.records.schema import Record as KioRecord
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

from shoal import limits
from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.log.manager import LogManager
from shoal.protocol.errors import ErrorCode
from shoal.protocol.share import AcknowledgeType
from shoal.server.metadata.group_config_store import GroupConfigStore
from shoal.server.services.purgatory import Purgatory
from shoal.server.services.share_dlq import (
    HEADER_OFFSET,
    ScanResult,
    copied_offsets,
    dlq_batches,
    dlq_record,
)
from shoal.server.services.share_service import ShareAcknowledgeCall, ShareService
from shoal.share.acknowledge import AckBatch
from shoal.share.persister import InMemoryPersister, SharePartitionKey, StateWrite
from shoal.share.sessions import TopicIdPartition
from shoal.share.states import RecordState
from tests.support.batches import COMPRESSION_GZIP, Record, build_batch
from tests.support.metadata import metadata_at
from tests.support.share_rig import fetch_acquired
from tests.unit.log.batches import append, make_batch


class FlakyPersister(InMemoryPersister):
    """Fails the writes that archive (state 4) while `fail_archived` is set."""

    fail_archived = False

    def write(self, *, write: StateWrite) -> ErrorCode | None:
        if self.fail_archived and any(
            b.delivery_state == RecordState.ARCHIVED for b in write.state_batches
        ):
            return ErrorCode.coordinator_not_available
        return super().write(write=write)


class Rig:
    def __init__(
        self,
        tmp_path: Path,
        *,
        enable: bool = True,
        dlq: str = "dlq.t",
        copy_record: bool = False,
        source: bytes | None = None,
    ) -> None:
        self.clock = ManualClock()
        self.config = BrokerConfig.from_raw({"log.dirs": str(tmp_path / "data")})
        self.logs = LogManager.open(
            data_dir=tmp_path / "data", broker_config=self.config, clock=self.clock
        )
        info = self.logs.create_topic("t", partitions=1, configs={})
        self.logs.create_topic(
            dlq,
            partitions=1,
            configs={"errors.deadletterqueue.group.enable": True} if enable else {},
        )
        self.dlq = dlq
        self.tp = TopicIdPartition(info.topic_id, 0)
        self.key = SharePartitionKey("g", info.topic_id, 0)
        self.counted: list[tuple[str, str, int]] = []
        self.flushed_at: list[int] = []
        """DLQ records present each time staged share state was flushed."""
        self.persister = FlakyPersister()
        assert self.persister.initialize(key=self.key, state_epoch=1, start_offset=0) is None
        configs = GroupConfigStore(
            metadata=metadata_at(tmp_path / "data"),
            broker_config=lambda: self.config,
        )
        asyncio.run(
            configs.alter(
                "g",
                {
                    "errors.deadletterqueue.topic.name": dlq,
                    "errors.deadletterqueue.copy.record.enable": copy_record,
                },
            )
        )
        self.service = ShareService(
            clock=self.clock,
            config=lambda: self.config,
            logs=self.logs,
            group_configs=configs,
            persister=self.persister,
            purgatory=Purgatory(),
            dlq_records=lambda group, outcome, n: self.counted.append((group, outcome, n)),
            flush_state=lambda: self.flushed_at.append(len(self.dlq_offsets())),
        )
        partition = self.logs.partition("t", 0)
        assert partition is not None
        append(partition, make_batch(3) if source is None else source)
        self.epoch = 0

    def fetch(self) -> int:
        self.epoch += 1
        return fetch_acquired(
            self.service, member_id="m", epoch=self.epoch - 1, partitions=(self.tp,)
        )

    def reject_all(self, *, crash_before_copy: bool = False) -> None:
        """REJECT 0..2 as the ShareAcknowledge handler does; with `crash_before_copy`
        only the share-partition manager runs (ARCHIVING is persisted) and the
        service never performs the copies."""
        batch = AckBatch(0, 2, (AcknowledgeType.REJECT,))
        if crash_before_copy:
            partitions = self.service.partitions
            acked = partitions.acknowledge(
                group_id="g",
                member_id="m",
                partition=self.tp,
                batches=[batch],
                settings=self.service.settings_for("g"),
            )
            assert acked.pending is not None
            written = self.persister.write(write=acked.pending.pending.write)
            acked = partitions.acknowledge_written(acked.pending, written)
            assert acked.error is None and acked.effects.dlq == {self.key}
            return
        outcome = self.service.share_acknowledge(
            ShareAcknowledgeCall(
                group_id="g", member_id="m", epoch=self.epoch, acknowledgements={self.tp: [batch]}
            )
        )
        assert outcome.error is None and outcome.partitions[0].acknowledge_error is None

    def crash(self) -> None:
        """Forget the in-memory share-partition: the next use reloads it from the
        persister, as a restarted broker would."""
        self.service.partitions.forget_group("g")
        self.epoch = 0

    def dlq_records(self) -> list[Any]:
        dlq = self.logs.partition(self.dlq, 0)
        assert dlq is not None
        read = dlq.read(0, max_bytes=1 << 20)
        found = []
        for header in read.headers:
            batch, _ = read_batch(read.records, header.position)
            found.extend(batch.records)
        return found

    def dlq_offsets(self) -> list[int]:
        return [
            int({h.key: h.value for h in r.headers}.get(HEADER_OFFSET.encode()) or b"-1")
            for r in self.dlq_records()
        ]

    def persisted_states(self) -> list[int]:
        state = self.persister.read(key=self.key, leader_epoch=0).state
        assert state is not None
        return [b.delivery_state for b in state.state_batches]


def test_copies_are_written_then_archived(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    assert rig.fetch() == 3
    rig.reject_all()
    assert rig.dlq_offsets() == [0, 1, 2]
    sp = rig.service.partitions.get(rig.key)
    assert sp is not None and sp.start_offset == 3
    assert rig.service.dlq.counts["g"].written == 3
    assert rig.counted == [("g", "written", 3)]
    assert rig.flushed_at == [0], "staged ARCHIVING state is flushed before the copy"


def test_a_crash_before_the_copy_writes_it_after_the_restart(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.fetch()
    rig.reject_all(crash_before_copy=True)
    assert rig.persisted_states() == [RecordState.ARCHIVING]
    rig.crash()
    assert rig.dlq_offsets() == []
    assert rig.fetch() == 0  # reload: the recovered copies are written
    assert rig.dlq_offsets() == [0, 1, 2]
    assert rig.persisted_states() == []  # archived, start offset past them


def test_a_crash_between_the_copy_and_the_archived_write_does_not_copy_twice(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.fetch()
    rig.persister.fail_archived = True  # the ARCHIVED write never lands
    rig.reject_all()
    assert rig.dlq_offsets() == [0, 1, 2]
    assert rig.persisted_states() == [RecordState.ARCHIVING]
    rig.persister.fail_archived = False
    rig.crash()
    assert rig.fetch() == 0
    assert rig.dlq_offsets() == [0, 1, 2], "copied twice"
    assert rig.counted == [("g", "written", 3), ("g", "written", 0)]
    assert rig.persisted_states() == []


def test_a_topic_not_enabled_gets_nothing_and_the_records_are_archived(tmp_path: Path) -> None:
    rig = Rig(tmp_path, enable=False)
    rig.fetch()
    rig.reject_all()
    assert rig.dlq_offsets() == []
    assert rig.persisted_states() == []
    counts = rig.service.dlq.counts["g"]
    assert (counts.written, counts.refused) == (0, 3)
    assert rig.counted == [("g", "refused", 3)]


def test_a_compressed_source_record_is_copied_whole(tmp_path: Path) -> None:
    """With copy.record.enable, records of a gzip batch reach the DLQ inflated: key,
    value and headers first, then the context headers."""
    records = [Record(key=f"k{i}".encode(), value=f"v{i}".encode() * 50) for i in range(3)]
    records[1] = Record(key=b"k1", value=b"v1" * 50, headers=(("h", b"x"),))
    source = build_batch(records, compression=COMPRESSION_GZIP)
    rig = Rig(tmp_path, copy_record=True, source=source)
    assert rig.fetch() == 3
    rig.reject_all()
    copied = rig.dlq_records()
    assert [(r.key, r.value) for r in copied] == [(r.key, r.value) for r in records]
    assert [h.key for h in copied[1].headers][:2] == [b"h", b"__dlq.errors.topic"]
    assert rig.dlq_offsets() == [0, 1, 2]


def _crash_after_the_copies(rig: Rig, *, filler: int) -> None:
    """Copies of 0..2 written, the ARCHIVED write lost, `filler` other records appended
    to the DLQ partition, then a crash."""
    rig.fetch()
    rig.persister.fail_archived = True
    rig.reject_all()
    rig.persister.fail_archived = False
    dlq = rig.logs.partition(rig.dlq, 0)
    assert dlq is not None
    append(dlq, make_batch(filler))
    rig.crash()


def test_the_dedupe_search_finds_copies_behind_newer_records_within_its_limit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rig = Rig(tmp_path)
    rig.service.dlq.scan_records_max = 11  # reaches offset 2, in the copies' batch
    _crash_after_the_copies(rig, filler=10)
    assert rig.fetch() == 0
    assert rig.dlq_offsets() == [0, 1, 2, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1]
    assert rig.persisted_states() == []
    assert "stopped at its limit" not in caplog.text


def test_at_the_dedupe_search_limit_unfound_copies_are_written_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The limit (limits.DLQ_DEDUPE_SCAN_RECORDS_MAX) stops the search before the old
    copies: they are written again rather than lost, and the warning says so."""
    rig = Rig(tmp_path)
    assert rig.service.dlq.scan_records_max == limits.DLQ_DEDUPE_SCAN_RECORDS_MAX
    rig.service.dlq.scan_records_max = 10  # the 10 newer records only
    _crash_after_the_copies(rig, filler=10)
    with caplog.at_level(logging.WARNING, logger="shoal.server.services.share_dlq"):
        assert rig.fetch() == 0
    assert rig.dlq_offsets()[13:] == [0, 1, 2]
    assert rig.persisted_states() == [], "archived after the copies"
    assert rig.counted[-1] == ("g", "written", 3)
    (warning,) = [
        r.getMessage()
        for r in caplog.records
        if r.name == "shoal.server.services.share_dlq" and r.levelno == logging.WARNING
    ]
    assert warning == (
        "share group g: DLQ dedupe search of dlq.t-0 stopped at its limit of 10 offsets "
        "(searched 3-12, not 0-2); 3 recovered copies of t-0 (offsets 0 to 2) not found "
        "there are written and may duplicate copies further back"
    )


def test_the_dedupe_search_goes_backwards_and_stops_once_every_copy_is_found(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    dlq = rig.logs.partition(rig.dlq, 0)
    assert dlq is not None
    append(dlq, make_batch(1_200))  # offsets 0..1199, not copies
    rig.fetch()
    rig.reject_all()  # copies of 0..2 at 1200..1202
    assert dlq.log_end_offset == 1_203

    def search(group: str, wanted: set[int], max_offsets: int) -> ScanResult:
        return copied_offsets(
            dlq, group_id=group, topic="t", partition=0, wanted=wanted, max_offsets=max_offsets
        )

    # found in the newest chunk of 1000 offsets: the older 203 are never read
    assert search("g", {0, 1, 2}, 10_000) == ScanResult(frozenset({0, 1, 2}), 203, complete=True)
    assert search("g", set(), 10_000) == ScanResult(frozenset(), 1_203, complete=True)
    # another group's copies are not these: the whole partition is searched
    assert search("h", {0}, 10_000) == ScanResult(frozenset(), 0, complete=True)
    # ... unless the limit stops the search first
    assert search("h", {0}, 1_100) == ScanResult(frozenset(), 103, complete=False)


def test_dlq_batches_stay_within_the_topics_max_bytes_in_one_encode_each() -> None:
    """`dlq_batches` splits copies by the DLQ topic's max.message.bytes, keeps their order,
    sends a record larger than the bound alone (the append refuses it), and measures
    each record once: 500 copies, a ShareConsumer's default poll, took seconds when
    each added record re-encoded the batch so far."""
    pads = [5_000 if i == 7 else 50 for i in range(500)]
    records = [
        dlq_record(None, index=i, headers=((HEADER_OFFSET, str(i)), ("pad", "x" * pad)))
        for i, pad in enumerate(pads)
    ]
    encoded = list(dlq_batches(records, timestamp_ms=0, max_bytes=2_000))
    batches = [read_batch(data, 0)[0] for data in encoded]
    assert [r.headers for b in batches for r in b.records] == [r.headers for r in records]
    alone = [(len(data), len(b.records)) for data, b in zip(encoded, batches, strict=True)]
    assert [n for size, n in alone if size > 2_000] == [1]  # the 5,000-byte one
    assert len(batches) <= 30  # about 20 records of ~90 bytes fill each batch


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@pytest.mark.parametrize("max_bytes", [1 << 20, 300])
def test_dlq_batches_are_kios_bytes(max_bytes: int) -> None:
    """The copies' batches are byte for byte what kio's writer (the DLQ's writer before
    the shared one) makes of the same records: the original key, value and headers
    (a null header value included), then the context headers, one timestamp."""
    originals: list[KioRecord | None] = [
        KioRecord(
            attributes=i8(0),
            timestamp=TZAwareMicros.parse(_EPOCH),
            offset=i64(40 + n),
            key=None if n == 2 else b"key%d" % n,
            value=None if n == 3 else b"value" * n,
            headers=(
                RecordHeader(key=b"orig", value=b"h%d" % n),
                RecordHeader(key=b"nul", value=None),
            ),
        )
        for n in range(6)
    ] + [None]
    records = [
        dlq_record(
            original,
            index=i,
            headers=((HEADER_OFFSET, str(40 + i)), ("__dlq.errors.message", "rejected")),
        )
        for i, original in enumerate(originals)
    ]
    timestamp_ms = 1_764_236_056_123
    stamp = TZAwareMicros.parse(_EPOCH + datetime.timedelta(milliseconds=timestamp_ms))
    encoded = list(dlq_batches(records, timestamp_ms=timestamp_ms, max_bytes=max_bytes))
    assert (len(encoded) == 1) is (max_bytes == 1 << 20)
    first = 0
    for data in encoded:
        count = len(read_batch(data, 0)[0].records)
        chunk = records[first : first + count]
        reference = NewRecordBatch(
            producer_id=i64(-1),
            producer_epoch=i16(-1),
            partition_leader_epoch=i32(0),
            base_sequence=i32(-1),
            records=tuple(
                dataclasses.replace(r, timestamp=stamp, offset=i64(n)) for n, r in enumerate(chunk)
            ),
            attributes=i16(0),
        )
        buffer = io.BytesIO()
        write_new_batch(buffer, reference)
        assert data == buffer.getvalue()
        first += count
    assert first == len(records)
