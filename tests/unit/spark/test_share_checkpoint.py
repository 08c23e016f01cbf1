"""Reading which batches Spark committed from a query's checkpoint (share_checkpoint.py),
on directories laid out as Spark lays them out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shoal.client.ranges import Span
from shoal.spark.share_checkpoint import (
    committed_offsets,
    kept_member_id,
    local_checkpoint,
    member_id_path,
)
from shoal.spark.share_offsets import ShareOffset, TopicPartition

TP = TopicPartition("orders", 0)
METADATA = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1795303153549, "conf": {}})


def end(seq: int, first: int, last: int) -> ShareOffset:
    return ShareOffset(seq=seq, spans={TP: (Span(first, last, 1),)})


def write_batch(
    checkpoint: Path, batch_id: int, *sources: ShareOffset | str, committed: bool
) -> None:
    """offsets/<id> as Spark writes it (one line per source, `-` for a source without
    an offset) and, when committed, commits/<id> with its .crc beside it."""
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    lines = ["v1", METADATA] + [
        s if isinstance(s, str) else json.dumps(s.to_json()) for s in sources
    ]
    (checkpoint / "offsets" / str(batch_id)).write_text("\n".join(lines))
    (checkpoint / "offsets" / f".{batch_id}.crc").write_bytes(b"crc")
    if committed:
        (checkpoint / "commits" / str(batch_id)).write_text('v1\n{"nextBatchWatermarkMs":0}')
        (checkpoint / "commits" / f".{batch_id}.crc").write_bytes(b"crc")


def test_committed_batches_read_newest_first_and_uncommitted_ones_are_not(
    tmp_path: Path,
) -> None:
    write_batch(tmp_path, 0, end(1, 0, 9), committed=True)
    write_batch(tmp_path, 1, end(2, 10, 19), committed=True)
    write_batch(tmp_path, 2, end(3, 20, 29), committed=False)
    (tmp_path / "commits" / ".2.8c0e.tmp").write_text("half written")
    assert committed_offsets(tmp_path) == [end(2, 10, 19), end(1, 0, 9)]


def test_other_sources_lines_are_skipped(tmp_path: Path) -> None:
    write_batch(tmp_path, 0, "-", '{"orders":{"0":42}}', end(1, 0, 4), "{not json", committed=True)
    assert committed_offsets(tmp_path) == [end(1, 0, 4)]


def test_a_query_that_never_committed_reads_as_nothing(tmp_path: Path) -> None:
    assert committed_offsets(tmp_path / "absent") == []
    write_batch(tmp_path, 0, end(1, 0, 4), committed=False)
    assert committed_offsets(tmp_path) == []


def test_only_the_newest_batches_are_read(tmp_path: Path) -> None:
    for batch_id in range(5):
        write_batch(tmp_path, batch_id, end(batch_id + 1, batch_id, batch_id), committed=True)
    found = committed_offsets(tmp_path, batches_max=2)
    assert [o.seq for o in found] == [5, 4]


def test_a_commit_whose_offsets_file_is_gone_is_skipped(tmp_path: Path) -> None:
    write_batch(tmp_path, 0, end(1, 0, 4), committed=True)
    write_batch(tmp_path, 1, end(2, 5, 9), committed=True)
    (tmp_path / "offsets" / "0").unlink()
    assert committed_offsets(tmp_path) == [end(2, 5, 9)]


def test_an_unexpected_offsets_format_is_skipped(tmp_path: Path) -> None:
    write_batch(tmp_path, 0, end(1, 0, 4), committed=True)
    (tmp_path / "offsets" / "0").write_text('v9\n{}\n{"v": 1}')
    assert committed_offsets(tmp_path) == []


def test_local_locations_resolve_to_absolute_directories(tmp_path: Path) -> None:
    assert local_checkpoint(str(tmp_path)) == tmp_path
    assert local_checkpoint(f"file://{tmp_path}") == tmp_path
    assert local_checkpoint(f"file:{tmp_path}") == tmp_path
    assert local_checkpoint("file:///tmp/with%20space") == Path("/tmp/with space")
    assert local_checkpoint("relative/cp") == Path.cwd() / "relative" / "cp"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "must not be empty"),
        ("  ", "must not be empty"),
        ("hdfs://nn:8020/cp", "not a hdfs: URI"),
        ("s3a://bucket/cp", "not a s3a: URI"),
        ("file://otherhost/cp", "names another host"),
    ],
)
def test_remote_or_empty_locations_are_refused(value: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        local_checkpoint(value)


def test_the_member_id_is_kept_per_group_and_read_back_at_the_next_start(tmp_path: Path) -> None:
    first = kept_member_id(tmp_path / "cp", "orders/eu")
    assert len(first) == 22
    assert kept_member_id(tmp_path / "cp", "orders/eu") == first  # the restarted query's
    other = kept_member_id(tmp_path / "cp", "audit")
    assert other != first
    path = member_id_path(tmp_path / "cp", "orders/eu")
    assert path.parent == tmp_path / "cp" / "shoal-share"  # one file per group, '/' quoted
    assert path.read_text() == first + "\n"
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("content", [b"", b"two words", b"x" * 65, b"\xff\xfe"])
def test_a_member_id_file_that_is_not_ours_is_replaced(tmp_path: Path, content: bytes) -> None:
    path = member_id_path(tmp_path, "g")
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    member_id = kept_member_id(tmp_path, "g")
    assert len(member_id) == 22 and path.read_text() == member_id + "\n"


def test_an_unwritable_checkpoint_raises_oserror(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(OSError):
        kept_member_id(tmp_path / "file", "g")
