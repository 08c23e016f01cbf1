"""The records of the cluster metadata log (`__cluster_metadata-0`): kio entities, `CODEC`.

The record model is `shoal.coordinator.records`' (a key entity, a value entity or no
value, framed by `RecordCodec`). The record types take the apiKeys of KRaft's metadata
records (metadata/src/main/resources/common/metadata/*.json in Kafka's sources) and
their fields, but Shoal's encoding differs in one way, on purpose: KRaft's records
are bare values and a removal is a record of its own (RemoveTopicRecord,
RemoveAccessControlEntryRecord, RemoveUserScramCredentialRecord, a ClientQuotaRecord
with Remove set, a ConfigRecord with a null Value); here each record has a key naming
what it sets, and a removal is that key's tombstone (value None). So the log reads as
"key := value" throughout and one replay rule serves every type.

    type  KRaft name                 key                               value
    2     TopicRecord                Name                              TopicId, Partitions, Internal
    4     ConfigRecord               ResourceType, ResourceName, Name  Value
    11    UserScramCredentialRecord  Name, Mechanism                   Salt, StoredKey, ServerKey,
                                                                       Iterations
    14    ClientQuotaRecord          Entity [EntityType, EntityName],  Value
                                     Key
    18    AccessControlEntryRecord   ResourceType, ResourceName,       (empty)
                                     PatternType, Principal, Host,
                                     Operation, PermissionType

Differences besides the tombstones: TopicRecord carries the partition count (Shoal
has one broker, so PartitionRecord's replicas and ISR say nothing; a count is the
whole partition assignment) and the internal flag; an ACL is keyed by its own fields
(an ACL set holds each binding at most once) instead of KRaft's random Id; a topic's
config overrides are ConfigRecords of resource type TOPIC (2), as in KRaft.

Keys are not flexible (as the coordinators' keys); values are flexible version 0.
No `from __future__ import annotations`: kio reads the field types at run time.
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.static.constants import EntityType
from kio.static.primitive import i16

from shoal.coordinator import records

TOPIC_RESOURCE, BROKER_RESOURCE, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE = 2, 4, 16, 32
"""Kafka's ConfigResource types a ConfigRecord may name."""


# ---- type 2: TopicRecord --------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicValue(records.ValueStruct):
    topic_id: uuid.UUID = field(metadata={"kafka_type": "uuid"})
    partitions: int = field(metadata={"kafka_type": "int32"})
    internal: bool = field(metadata={"kafka_type": "bool"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 2
    VALUE: ClassVar[type[TopicValue]] = TopicValue
    name: str = field(metadata={"kafka_type": "string"})


# ---- type 4: ConfigRecord -------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigValue(records.ValueStruct):
    value: str = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 4
    VALUE: ClassVar[type[ConfigValue]] = ConfigValue
    resource_type: int = field(metadata={"kafka_type": "int8"})
    resource_name: str = field(metadata={"kafka_type": "string"})
    name: str = field(metadata={"kafka_type": "string"})


# ---- type 11: UserScramCredentialRecord -----------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramCredentialValue(records.ValueStruct):
    salt: bytes = field(metadata={"kafka_type": "bytes"})
    stored_key: bytes = field(metadata={"kafka_type": "bytes"})
    server_key: bytes = field(metadata={"kafka_type": "bytes"})
    iterations: int = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramCredentialKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 11
    VALUE: ClassVar[type[ScramCredentialValue]] = ScramCredentialValue
    name: str = field(metadata={"kafka_type": "string"})
    mechanism: int = field(metadata={"kafka_type": "int8"})
    """Kafka's ScramMechanism type id: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512."""


# ---- type 14: ClientQuotaRecord -------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityData:
    """One part of a quota entity; nested in a key, so not flexible either."""

    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    entity_type: str = field(metadata={"kafka_type": "string"})
    entity_name: str | None = field(metadata={"kafka_type": "string"})
    """None: the entity type's default."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientQuotaValue(records.ValueStruct):
    value: float = field(metadata={"kafka_type": "float64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientQuotaKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 14
    VALUE: ClassVar[type[ClientQuotaValue]] = ClientQuotaValue
    entity: tuple[EntityData, ...]
    key: str = field(metadata={"kafka_type": "string"})


# ---- type 18: AccessControlEntryRecord ------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessControlEntryValue(records.ValueStruct):
    """Empty: the key is the whole ACL."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessControlEntryKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 18
    VALUE: ClassVar[type[AccessControlEntryValue]] = AccessControlEntryValue
    resource_type: int = field(metadata={"kafka_type": "int8"})
    resource_name: str = field(metadata={"kafka_type": "string"})
    pattern_type: int = field(metadata={"kafka_type": "int8"})
    principal: str = field(metadata={"kafka_type": "string"})
    host: str = field(metadata={"kafka_type": "string"})
    operation: int = field(metadata={"kafka_type": "int8"})
    permission_type: int = field(metadata={"kafka_type": "int8"})


# ---- the record and its codec -----------------------------------------------------------

MetadataKey = TopicKey | ConfigKey | ScramCredentialKey | ClientQuotaKey | AccessControlEntryKey
MetadataValue = (
    TopicValue | ConfigValue | ScramCredentialValue | ClientQuotaValue | AccessControlEntryValue
)

MetadataRecord = records.CoordinatorRecord[MetadataKey, MetadataValue]
"""A metadata record: `MetadataRecord(key=..., value=... or None)`."""

METADATA_TOPIC = "__cluster_metadata"

CODEC: records.RecordCodec[MetadataKey, MetadataValue] = records.RecordCodec(
    topic=METADATA_TOPIC,
    keys=(TopicKey, ConfigKey, ScramCredentialKey, ClientQuotaKey, AccessControlEntryKey),
)
"""Bytes of `__cluster_metadata` records (module docstring)."""
