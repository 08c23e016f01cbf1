"""The durable ACL set on the metadata log: changes reach the authorizer only once on
disk, a restart replays them, a torn log tail is ignored, the size limit holds, and an
old acls.json is migrated (refused when corrupt or oversized); and an old topics.json
migrated too."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from shoal import limits
from shoal.config import BrokerConfig
from shoal.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from shoal.security.authorizer import AclBinding, AclBindingFilter, StandardAuthorizer
from shoal.server.metadata.acl_store import AclStore, open_acl_store
from shoal.server.metadata.metadata_log import METADATA_DIR
from shoal.server.metadata.migration import ACLS_FILE, MIGRATED_SUFFIX, TOPICS_FILE
from shoal.server.metadata.topic_catalog import MetadataTopicCatalog
from tests.support.metadata import metadata_at, open_metadata

READ_T = AclBinding(
    ResourceType.TOPIC,
    "t",
    PatternType.LITERAL,
    "User:alice",
    "*",
    AclOperation.READ,
    PermissionType.ALLOW,
)
DENY_PREFIX = AclBinding(
    ResourceType.GROUP,
    "g-",
    PatternType.PREFIXED,
    "User:*",
    "10.0.0.1",
    AclOperation.ALL,
    PermissionType.DENY,
)


def store_at(path: Path, **kw: int) -> AclStore:
    """The ACL store over the metadata log of `path` (the previous one closed: each
    call is a restart)."""
    metadata = metadata_at(path)
    store = AclStore.open(StandardAuthorizer(), metadata)
    return AclStore(authorizer=store.authorizer, metadata=metadata, **kw)


def old_acls_file(path: Path, rows: list[list[str]]) -> None:
    """acls.json as the versions before the metadata log wrote it."""
    (path / ACLS_FILE).write_text(json.dumps({"version": 1, "acls": rows}))


def test_restart_keeps_the_acls(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    outcome = asyncio.run(store.create([READ_T, DENY_PREFIX, READ_T]))
    assert outcome.problems == (None, None, None)
    assert store.authorizer.acls() == sorted([READ_T, DENY_PREFIX])
    reopened = store_at(tmp_path)
    assert reopened.authorizer.acls() == sorted([READ_T, DENY_PREFIX])
    matched = asyncio.run(reopened.delete([AclBindingFilter(resource_type=ResourceType.GROUP)]))
    assert matched == [[DENY_PREFIX]]
    assert store_at(tmp_path).authorizer.acls() == [READ_T]


def test_invalid_bindings_are_refused_alone(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    bad = AclBinding(
        ResourceType.TOPIC,
        "t",
        PatternType.MATCH,
        "User:bob",
        "*",
        AclOperation.READ,
        PermissionType.ALLOW,
    )
    outcome = asyncio.run(store.create([bad, READ_T]))
    assert outcome.problems[0] is not None and "patternType" in outcome.problems[0]
    assert outcome.problems[1] is None
    assert store_at(tmp_path).authorizer.acls() == [READ_T]


def test_a_torn_log_tail_is_ignored(tmp_path: Path) -> None:
    asyncio.run(store_at(tmp_path).create([READ_T]))
    store_at(tmp_path).metadata.close()
    segment = next((tmp_path / METADATA_DIR).glob("*.log"))
    with segment.open("ab") as torn:  # half a batch, as a crash mid-append leaves it
        torn.write(b"\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x01\x00")
    assert store_at(tmp_path).authorizer.acls() == [READ_T]


def test_a_corrupt_file_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / ACLS_FILE).write_text('{"version": 1, "acls": [["TOPIC"]]}')
    with pytest.raises(OSError, match="unreadable"):
        open_metadata(tmp_path)


def test_an_old_acls_file_is_migrated_once(tmp_path: Path) -> None:
    old_acls_file(
        tmp_path,
        [["TOPIC", "t", "LITERAL", "User:alice", "*", "READ", "ALLOW"]],
    )
    assert store_at(tmp_path).authorizer.acls() == [READ_T]
    assert not (tmp_path / ACLS_FILE).exists()
    assert (tmp_path / (ACLS_FILE + MIGRATED_SUFFIX)).exists()
    asyncio.run(store_at(tmp_path).delete([AclBindingFilter()]))
    assert store_at(tmp_path).authorizer.acls() == [], "the old file is not read again"


def test_a_failed_write_changes_nothing(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    asyncio.run(store.create([READ_T]))
    store.metadata.partition.close()  # the log refuses every append now
    with pytest.raises(OSError):
        asyncio.run(store.create([DENY_PREFIX]))
    with pytest.raises(OSError):
        asyncio.run(store.delete([AclBindingFilter()]))
    assert store.authorizer.acls() == [READ_T]


def test_the_acl_limit_refuses_bindings_beyond_it(tmp_path: Path) -> None:
    store = store_at(tmp_path, acls_max=1)
    outcome = asyncio.run(store.create([READ_T, DENY_PREFIX, READ_T]))
    assert outcome.problems[0] is None
    assert outcome.problems[1] is not None and "Too many ACLs" in outcome.problems[1]
    assert outcome.problems[2] is None, "an existing binding is not a new one"
    assert store.authorizer.acls() == [READ_T]


def test_open_acl_store_follows_the_config(tmp_path: Path) -> None:
    base = {"log.dirs": str(tmp_path)}
    metadata = open_metadata(tmp_path)
    assert open_acl_store(BrokerConfig.from_raw(base), metadata) is None
    config = BrokerConfig.from_raw(
        {
            **base,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin;User:ops",
            "allow.everyone.if.no.acl.found": "true",
        }
    )
    store = open_acl_store(config, metadata)
    assert store is not None
    assert store.authorizer.super_users == {"User:admin", "User:ops"}
    assert store.authorizer.allow_everyone_if_no_acl_found
    short = open_acl_store(
        BrokerConfig.from_raw({**base, "authorizer.class.name": "standard"}), metadata
    )
    assert short is not None and not short.authorizer.super_users
    with pytest.raises(ValueError, match="principalType:principalName"):
        BrokerConfig.from_raw({**base, "super.users": "User:admin;ops"})
    with pytest.raises(ValueError, match="is not one of"):
        BrokerConfig.from_raw({**base, "authorizer.class.name": "com.example.Other"})


def test_an_oversized_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old_acls_file(
        tmp_path,
        [
            ["TOPIC", "t", "LITERAL", "User:alice", "*", "READ", "ALLOW"],
            ["GROUP", "g-", "PREFIXED", "User:*", "10.0.0.1", "ALL", "DENY"],
        ],
    )
    size = (tmp_path / ACLS_FILE).stat().st_size
    monkeypatch.setattr("shoal.limits.ACL_FILE_BYTES_MAX", size - 1)
    with pytest.raises(OSError, match="larger than"):
        open_metadata(tmp_path)
    monkeypatch.setattr("shoal.limits.ACL_FILE_BYTES_MAX", size)
    assert len(store_at(tmp_path).authorizer.acls()) == 2


def test_an_old_topics_file_is_migrated(tmp_path: Path) -> None:
    topic_id = "6f1c1c8e-2a4b-4f0e-9a57-6d2c2c7b8a10"
    (tmp_path / TOPICS_FILE).write_text(
        json.dumps(
            {
                "version": 1,
                "topics": [
                    {
                        "name": "orders",
                        "topic_id": topic_id,
                        "partitions": 3,
                        "configs": {"retention.ms": "1000"},
                        "internal": False,
                    }
                ],
            }
        )
    )
    (info,) = MetadataTopicCatalog(metadata_at(tmp_path)).load()
    assert (info.name, str(info.topic_id), info.partitions) == ("orders", topic_id, 3)
    assert info.configs == {"retention.ms": 1000} and not info.internal
    assert (tmp_path / (TOPICS_FILE + MIGRATED_SUFFIX)).exists()
    (tmp_path / TOPICS_FILE).write_text("{")
    with pytest.raises(OSError, match="unreadable"):
        open_metadata(tmp_path)


def test_an_acls_file_larger_than_one_batch_is_migrated_in_several(tmp_path: Path) -> None:
    """25,000 ACLs make about 1.5 MB of records, above the metadata log's batch bound
    (limits.COORDINATOR_BATCH_BYTES_MAX): the migration cuts them into appends
    (limits.METADATA_STARTUP_BATCH_BYTES)."""
    rows = [
        ["TOPIC", f"topic-{i}", "LITERAL", f"User:user-{i}", "*", "READ", "ALLOW"]
        for i in range(25_000)
    ]
    old_acls_file(tmp_path, rows)
    store = store_at(tmp_path)
    assert len(store.authorizer.acls()) == 25_000
    partition = store.metadata.partition
    batches = partition.read(0, max_bytes=1 << 24).headers
    assert len(batches) >= 3
    assert all(h.batch_length <= limits.COORDINATOR_BATCH_BYTES_MAX for h in batches)
    assert len(store_at(tmp_path).authorizer.acls()) == 25_000
