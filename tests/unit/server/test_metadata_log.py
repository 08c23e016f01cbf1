"""The metadata log (server/metadata/metadata_log.py): writes are replayed only once durable, a
refused append changes nothing, and the start-up compaction replaces the history by
the state's snapshot without changing the state."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from shoal.metadata import MetadataImage, ScramUpsertion, TopicImage
from shoal.metadata.records import GROUP_RESOURCE, TOPIC_RESOURCE
from shoal.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from shoal.security.authorizer import AclBinding
from shoal.security.scram import ScramCredential
from shoal.server.metadata.metadata_log import MetadataLog, MetadataWriteError
from tests.support.metadata import metadata_at

ACL = AclBinding(
    ResourceType.TOPIC,
    "t",
    PatternType.LITERAL,
    "User:a",
    "*",
    AclOperation.READ,
    PermissionType.ALLOW,
)


def churn(metadata: MetadataLog, changes: int) -> MetadataImage:
    """Some of every kind, then `changes` changes of one group config key."""
    shard = metadata.shard
    metadata.write_now(shard.create_acls([ACL], acls_max=10))
    metadata.write_now(shard.alter_quotas({(("client-id", "c"),): {"producer_byte_rate": 5.0}}))
    credential = ScramCredential(b"s", b"k", b"v", 4096)
    metadata.write_now(
        shard.alter_scram(
            upsertions=[ScramUpsertion("u", "SCRAM-SHA-256", credential)], deletions=()
        )
    )
    metadata.write_now(shard.put_topic(TopicImage("t", uuid.UUID(int=5), 2, False)))
    metadata.write_now(shard.set_configs(TOPIC_RESOURCE, "t", {"retention.ms": "1000"}))
    metadata.write_now(shard.put_topic(TopicImage("gone", uuid.UUID(int=6), 1, False)))
    metadata.write_now(shard.remove_topic("gone"))
    for i in range(changes):
        metadata.write_now(shard.set_configs(GROUP_RESOURCE, "g", {"k": str(i)}))
    return metadata.image


def test_a_long_history_is_compacted_at_start_and_the_state_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("shoal.limits.METADATA_COMPACT_RECORDS_MIN", 50)
    before = churn(metadata_at(tmp_path), 200)
    end = metadata_at(tmp_path).partition.log_end_offset  # a restart: compacted here
    reopened = metadata_at(tmp_path)
    assert reopened.image == before
    assert reopened.partition.log_start_offset == end - len(reopened.shard.snapshot()) > 200
    assert reopened.shard.records_replayed == len(reopened.shard.snapshot()) < 10
    assert not reopened.compact(), "a compacted log is not compacted again"


def test_a_short_history_is_kept(tmp_path: Path) -> None:
    before = churn(metadata_at(tmp_path), 200)
    reopened = metadata_at(tmp_path)  # below limits.METADATA_COMPACT_RECORDS_MIN
    assert reopened.image == before and reopened.partition.log_start_offset == 0


def test_a_crash_between_the_snapshot_and_the_log_start_move_changes_nothing(
    tmp_path: Path,
) -> None:
    metadata = metadata_at(tmp_path)
    before = churn(metadata, 20)
    metadata.write_now_in_batches(metadata.shard.snapshot())  # then the crash
    assert metadata.image == before
    assert metadata_at(tmp_path).image == before


def test_a_refused_append_replays_nothing(tmp_path: Path) -> None:
    metadata = metadata_at(tmp_path)
    before = churn(metadata, 1)
    metadata.partition.close()
    with pytest.raises(MetadataWriteError):
        asyncio.run(metadata.write(metadata.shard.set_configs(GROUP_RESOURCE, "g", {"k": "x"})))
    assert metadata.image == before
    assert metadata_at(tmp_path).image == before
