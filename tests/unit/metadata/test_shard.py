"""The metadata shard: operations decide records and change nothing, replay is the
only mutator, a reload from the records equals the live shard, images are snapshots,
and every record kind survives the codec."""

from __future__ import annotations

import uuid

import pytest

from shoal.coordinator import CoordinatorRuntime, InMemoryRecordSink
from shoal.coordinator.records import CoordinatorRecord
from shoal.metadata import CODEC, MetadataRecord, MetadataShard, ScramDeletion, ScramUpsertion
from shoal.metadata.image import TopicImage
from shoal.metadata.records import BROKER_RESOURCE, GROUP_RESOURCE, TOPIC_RESOURCE
from shoal.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from shoal.security.authorizer import AclBinding, AclBindingFilter
from shoal.security.scram import ScramCredential

READ = AclBinding(
    ResourceType.TOPIC,
    "t",
    PatternType.LITERAL,
    "User:a",
    "*",
    AclOperation.READ,
    PermissionType.ALLOW,
)
WRITE = AclBinding(
    ResourceType.TOPIC,
    "t",
    PatternType.PREFIXED,
    "User:b",
    "*",
    AclOperation.WRITE,
    PermissionType.DENY,
)
CREDENTIAL = ScramCredential(salt=b"s", stored_key=b"k", server_key=b"v", iterations=4096)
USER = (("user", "alice"),)
TOPIC = TopicImage("orders", uuid.UUID(int=7), 3, False)


def runtime() -> tuple[
    CoordinatorRuntime[MetadataShard, MetadataRecord], InMemoryRecordSink[MetadataRecord]
]:
    sink: InMemoryRecordSink[MetadataRecord] = InMemoryRecordSink()
    return CoordinatorRuntime(new_shard=lambda _p: MetadataShard(), sinks=[sink]), sink


def test_operations_change_nothing_until_replayed() -> None:
    shard = MetadataShard()
    result = shard.create_acls([READ], acls_max=10)
    assert len(result.records) == 1 and result.response == (None,)
    assert shard.image.acls == frozenset()
    shard.replay(result.records[0])
    assert shard.image.acls == {READ}


def test_every_kind_round_trips_and_a_reload_equals_the_live_shard() -> None:
    rt, sink = runtime()
    rt.write(0, lambda shard: shard.create_acls([READ, WRITE], acls_max=10))
    rt.write(
        0,
        lambda shard: shard.alter_quotas(
            {(("client-id", None), ("user", "alice")): {"producer_byte_rate": 1024.0}}
        ),
    )
    rt.write(
        0,
        lambda shard: shard.alter_scram(
            upsertions=[ScramUpsertion("alice", "SCRAM-SHA-256", CREDENTIAL)], deletions=[]
        ),
    )
    rt.write(0, lambda shard: shard.set_configs(BROKER_RESOURCE, "", {"num.partitions": "3"}))
    rt.write(
        0,
        lambda shard: shard.set_configs(
            GROUP_RESOURCE, "g", {"share.record.lock.duration.ms": "20000"}
        ),
    )
    rt.write(0, lambda shard: shard.put_topic(TOPIC))
    rt.write(0, lambda shard: shard.set_configs(TOPIC_RESOURCE, "orders", {"retention.ms": "1000"}))
    live = rt.shard_at(0).image
    decoded = [CODEC.decode(*CODEC.encode(record)) for record in sink.records]
    assert decoded == list(sink.records)
    reloaded = rt.load_partition(0, enumerate(decoded)).image
    assert reloaded == live
    assert live.quotas == {(("client-id", None), ("user", "alice")): {"producer_byte_rate": 1024.0}}
    assert live.scram == {"alice": {"SCRAM-SHA-256": CREDENTIAL}}
    assert live.config(BROKER_RESOURCE, "") == {"num.partitions": "3"}
    assert live.config_resources(GROUP_RESOURCE) == ["g"]
    assert live.topics == {"orders": TOPIC}


def test_removals_are_tombstones_and_empty_entities_go() -> None:
    rt, sink = runtime()
    rt.write(0, lambda shard: shard.create_acls([READ, WRITE], acls_max=10))
    matched = rt.write(
        0, lambda shard: shard.delete_acls([AclBindingFilter(principal="User:a")])
    ).response
    assert matched == [[READ]]
    rt.write(
        0,
        lambda shard: shard.alter_quotas(
            {USER: {"producer_byte_rate": 1.0, "consumer_byte_rate": 2.0}}
        ),
    )
    rt.write(0, lambda shard: shard.alter_quotas({USER: {"consumer_byte_rate": 2.0}}))
    assert rt.shard_at(0).image.quotas == {USER: {"consumer_byte_rate": 2.0}}
    rt.write(0, lambda shard: shard.alter_quotas({USER: {}}))
    rt.write(
        0,
        lambda shard: shard.alter_scram(
            upsertions=[ScramUpsertion("u", "SCRAM-SHA-512", CREDENTIAL)], deletions=[]
        ),
    )
    rt.write(
        0,
        lambda shard: shard.alter_scram(
            upsertions=[], deletions=[ScramDeletion("u", "SCRAM-SHA-512")]
        ),
    )
    rt.write(0, lambda shard: shard.set_configs(BROKER_RESOURCE, "1", {"a": "1"}))
    rt.write(0, lambda shard: shard.set_configs(BROKER_RESOURCE, "1", {}))
    rt.write(0, lambda shard: shard.put_topic(TOPIC))
    rt.write(0, lambda shard: shard.set_configs(TOPIC_RESOURCE, "orders", {"retention.ms": "1"}))
    rt.write(0, lambda shard: shard.remove_topic("orders"))
    image = rt.shard_at(0).image
    assert image.acls == {WRITE}
    assert image.quotas == {} and image.scram == {} and image.configs == {} and image.topics == {}
    tombstones = [r for r in sink.records if r.value is None]
    assert len(tombstones) == 7  # ACL, 2 quota keys, credential, config, topic, topic config
    assert rt.load_partition(0, enumerate(sink.records)).image == image


def test_writes_that_change_nothing_have_no_records() -> None:
    rt, _ = runtime()
    rt.write(0, lambda shard: shard.create_acls([READ], acls_max=10))
    rt.write(0, lambda shard: shard.set_configs(GROUP_RESOURCE, "g", {"k": "v"}))
    rt.write(0, lambda shard: shard.put_topic(TOPIC))
    shard = rt.shard_at(0)
    assert shard.create_acls([READ], acls_max=10).records == ()
    assert shard.delete_acls([AclBindingFilter(principal="User:nobody")]).records == ()
    assert shard.set_configs(GROUP_RESOURCE, "g", {"k": "v"}).records == ()
    assert shard.alter_quotas({USER: {}}).records == ()
    assert (
        shard.alter_scram(upsertions=[], deletions=[ScramDeletion("x", "SCRAM-SHA-256")]).records
        == ()
    )
    assert shard.put_topic(TOPIC).records == ()
    assert shard.remove_topic("absent").records == ()


def test_the_acl_limit_and_invalid_bindings_are_refused_alone() -> None:
    shard = MetadataShard()
    bad = AclBinding(
        ResourceType.TOPIC,
        "t",
        PatternType.MATCH,
        "User:x",
        "*",
        AclOperation.READ,
        PermissionType.ALLOW,
    )
    result = shard.create_acls([bad, READ, WRITE], acls_max=1)
    assert result.response[0] is not None
    assert result.response[1] is None
    assert result.response[2] is not None and "Too many ACLs" in result.response[2]
    assert [r.key for r in result.records] == [
        CODEC.decode(*CODEC.encode(r)).key for r in result.records
    ]
    assert len(result.records) == 1


def test_an_image_is_a_snapshot() -> None:
    rt, _ = runtime()
    rt.write(0, lambda shard: shard.set_configs(GROUP_RESOURCE, "g", {"k": "v"}))
    before = rt.shard_at(0).image
    assert rt.shard_at(0).image is before, "unchanged state shares its image"
    rt.write(0, lambda shard: shard.set_configs(GROUP_RESOURCE, "g", {"k": "w"}))
    assert before.config(GROUP_RESOURCE, "g") == {"k": "v"}
    assert rt.shard_at(0).image.config(GROUP_RESOURCE, "g") == {"k": "w"}
    with pytest.raises(TypeError):
        before.configs[(GROUP_RESOURCE, "h")] = {}  # type: ignore[index]


def test_a_credential_of_an_unknown_mechanism_is_skipped() -> None:
    shard = MetadataShard()
    record = shard.alter_scram(
        upsertions=[ScramUpsertion("u", "SCRAM-SHA-256", CREDENTIAL)], deletions=[]
    ).records[0]
    key = type(record.key)(name="u", mechanism=9)  # a newer version's mechanism
    shard.replay(CoordinatorRecord(key=key, value=record.value))
    assert shard.image.scram == {}


def test_a_snapshot_rebuilds_the_state_from_nothing() -> None:
    rt, _ = runtime()
    rt.write(0, lambda shard: shard.create_acls([READ, WRITE], acls_max=10))
    rt.write(0, lambda shard: shard.alter_quotas({USER: {"producer_byte_rate": 1.0}}))
    rt.write(
        0,
        lambda shard: shard.alter_scram(
            upsertions=[ScramUpsertion("alice", "SCRAM-SHA-512", CREDENTIAL)], deletions=[]
        ),
    )
    rt.write(0, lambda shard: shard.put_topic(TOPIC))
    rt.write(0, lambda shard: shard.set_configs(TOPIC_RESOURCE, "orders", {"retention.ms": "1"}))
    rt.write(0, lambda shard: shard.set_configs(GROUP_RESOURCE, "g", {"k": "v"}))
    rt.write(0, lambda shard: shard.set_configs(GROUP_RESOURCE, "g", {}))
    snapshot = rt.shard_at(0).snapshot()
    assert all(record.value is not None for record in snapshot)
    assert len(snapshot) == 6  # 2 ACLs, a quota, a credential, a topic and its config
    fresh = MetadataShard()
    for record in snapshot:
        fresh.replay(record)
    assert fresh.image == rt.shard_at(0).image
    assert rt.shard_at(0).snapshot() == snapshot, "the same state, the same records"
