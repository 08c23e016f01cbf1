"""`MetadataShard`: the cluster metadata as one event-sourced state machine.

Theory of operation (docs/design/metadata-log.md). Each write operation reads the current state,
decides, and returns a `CoordinatorResult` of metadata records (metadata/records.py)
and the response, changing nothing; `replay(record)` is the only mutator, run by the
coordinator runtime once the records are durable in `__cluster_metadata-0`, and by a
reload over that log. An operation that changes nothing returns no records (the
runtime then writes nothing).

Operations are whole-value writes, diffed against the state: the caller (the shell
of each admin API, which validates with the broker's config in hand) names the new
value of what it changes and the shard writes one record per key that differs, a
tombstone per key that goes. `create_acls` and `delete_acls` decide in full here
(their checks need nothing but the ACL set).

Readers take `image` (metadata/image.py): an immutable snapshot, built on first read
after a replay and then shared until the next one.

Deterministic: no clock, no randomness, no I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from shoal.coordinator.records import CoordinatorRecord
from shoal.coordinator.result import CoordinatorResult
from shoal.coordinator.runtime import NO_OFFSET
from shoal.metadata.image import MetadataImage, TopicImage, frozen_mapping
from shoal.metadata.records import (
    TOPIC_RESOURCE,
    AccessControlEntryKey,
    AccessControlEntryValue,
    ClientQuotaKey,
    ClientQuotaValue,
    ConfigKey,
    ConfigValue,
    EntityData,
    MetadataRecord,
    ScramCredentialKey,
    ScramCredentialValue,
    TopicKey,
    TopicValue,
)
from shoal.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from shoal.security.authorizer import AclBinding, AclBindingFilter
from shoal.security.quota import Entity
from shoal.security.scram import MECHANISMS, MECHANISMS_BY_ID, ScramCredential

log = logging.getLogger(__name__)

MetadataResult = CoordinatorResult[MetadataRecord, object]


@dataclass(frozen=True, slots=True)
class ScramUpsertion:
    user: str
    mechanism: str
    """A name of `security.scram.MECHANISMS`."""
    credential: ScramCredential


@dataclass(frozen=True, slots=True)
class ScramDeletion:
    user: str
    mechanism: str


def normalized_entity(entity: Entity) -> Entity:
    """A quota entity's one form: its parts sorted by entity type."""
    return tuple(sorted(entity, key=lambda part: part[0]))


class MetadataShard:
    """The metadata state and its write operations (see the module docstring)."""

    def __init__(self) -> None:
        self._acls: set[AclBinding] = set()
        self._quotas: dict[Entity, dict[str, float]] = {}
        self._scram: dict[str, dict[str, ScramCredential]] = {}
        self._configs: dict[tuple[int, str], dict[str, str]] = {}
        self._topics: dict[str, TopicImage] = {}
        self._image: MetadataImage | None = MetadataImage()
        self.records_replayed = 0
        """Records replayed since the shard was made (a load's count)."""

    # ---- reading
    @property
    def image(self) -> MetadataImage:
        """The state now, as an immutable snapshot."""
        image = self._image
        if image is None:
            image = self._image = MetadataImage(
                acls=frozenset(self._acls),
                quotas=frozen_mapping({e: frozen_mapping(v) for e, v in self._quotas.items()}),
                scram=frozen_mapping({u: frozen_mapping(c) for u, c in self._scram.items()}),
                configs=frozen_mapping({r: frozen_mapping(v) for r, v in self._configs.items()}),
                topics=frozen_mapping(self._topics),
            )
        return image

    # ---- ACLs
    def create_acls(
        self, acls: Sequence[AclBinding], *, acls_max: int
    ) -> CoordinatorResult[MetadataRecord, tuple[str | None, ...]]:
        """Add each valid binding not present yet. The response says, per binding in
        order, None (created or already present) or why it was refused: its own
        problem, or the set being at `acls_max`."""
        problems: list[str | None] = []
        seen = set(self._acls)
        new: list[AclBinding] = []
        for acl in acls:
            problem = acl.problem()
            if problem is None and acl not in seen and len(seen) >= acls_max:
                problem = f"Too many ACLs: the broker keeps at most {acls_max}"
            problems.append(problem)
            if problem is None and acl not in seen:
                seen.add(acl)
                new.append(acl)
        records: tuple[MetadataRecord, ...] = tuple(
            CoordinatorRecord(key=acl_key(a), value=_ACL_VALUE) for a in new
        )
        return CoordinatorResult(records, tuple(problems))

    def delete_acls(
        self, filters: Sequence[AclBindingFilter]
    ) -> CoordinatorResult[MetadataRecord, list[list[AclBinding]]]:
        """Remove every binding some filter matches; per filter, the bindings it
        matched, sorted (each filter valid: `AclBindingFilter.problem()` is None)."""
        current = sorted(self._acls)
        matched = [[acl for acl in current if f.matches(acl)] for f in filters]
        doomed = sorted({acl for acls in matched for acl in acls})
        records: tuple[MetadataRecord, ...] = tuple(
            CoordinatorRecord(key=acl_key(a), value=None) for a in doomed
        )
        return CoordinatorResult(records, matched)

    # ---- client quotas
    def alter_quotas(
        self, changes: Mapping[Entity, Mapping[str, float]]
    ) -> CoordinatorResult[MetadataRecord, None]:
        """Make each entity's values exactly those given (empty: the entity goes)."""
        records: list[MetadataRecord] = []
        for raw, values in changes.items():
            entity = normalized_entity(raw)
            current = self._quotas.get(entity, {})
            parts = tuple(EntityData(entity_type=t, entity_name=n) for t, n in entity)
            for key in sorted(current.keys() - values.keys()):
                records.append(
                    CoordinatorRecord(key=ClientQuotaKey(entity=parts, key=key), value=None)
                )
            for key, value in sorted(values.items()):
                if current.get(key) != value:
                    records.append(
                        CoordinatorRecord(
                            key=ClientQuotaKey(entity=parts, key=key),
                            value=ClientQuotaValue(value=float(value)),
                        )
                    )
        return CoordinatorResult(tuple(records), None)

    # ---- SCRAM credentials
    def alter_scram(
        self, *, upsertions: Iterable[ScramUpsertion], deletions: Iterable[ScramDeletion]
    ) -> CoordinatorResult[MetadataRecord, None]:
        """Delete, then upsert (each already validated by the caller)."""
        records: list[MetadataRecord] = []
        for deletion in deletions:
            if deletion.mechanism in self._scram.get(deletion.user, {}):
                key = _scram_key(deletion.user, deletion.mechanism)
                records.append(CoordinatorRecord(key=key, value=None))
        for upsertion in upsertions:
            c = upsertion.credential
            value = ScramCredentialValue(
                salt=c.salt,
                stored_key=c.stored_key,
                server_key=c.server_key,
                iterations=c.iterations,
            )
            key = _scram_key(upsertion.user, upsertion.mechanism)
            records.append(CoordinatorRecord(key=key, value=value))
        return CoordinatorResult(tuple(records), None)

    # ---- configs (dynamic broker layers, groups, client metrics, topics)
    def set_configs(
        self, resource_type: int, resource_name: str, values: Mapping[str, str]
    ) -> CoordinatorResult[MetadataRecord, None]:
        """Make `values` the whole set of keys of one config resource."""
        current = self._configs.get((resource_type, resource_name), {})
        records: list[MetadataRecord] = []
        for name in sorted(current.keys() - values.keys()):
            key = ConfigKey(resource_type=resource_type, resource_name=resource_name, name=name)
            records.append(CoordinatorRecord(key=key, value=None))
        for name, value in sorted(values.items()):
            if current.get(name) != value:
                key = ConfigKey(resource_type=resource_type, resource_name=resource_name, name=name)
                records.append(CoordinatorRecord(key=key, value=ConfigValue(value=value)))
        return CoordinatorResult(tuple(records), None)

    # ---- topics
    def put_topic(self, topic: TopicImage) -> CoordinatorResult[MetadataRecord, None]:
        """Create `topic`, or set its partition count (or, for a name whose topic was
        replaced meanwhile, its id: the last record of a name wins)."""
        if self._topics.get(topic.name) == topic:
            return CoordinatorResult((), None)
        value = TopicValue(
            topic_id=topic.topic_id, partitions=topic.partitions, internal=topic.internal
        )
        return CoordinatorResult(
            (CoordinatorRecord(key=TopicKey(name=topic.name), value=value),), None
        )

    def remove_topic(self, name: str) -> CoordinatorResult[MetadataRecord, None]:
        """Remove topic `name` and its config overrides."""
        if name not in self._topics:
            return CoordinatorResult((), None)
        records: list[MetadataRecord] = [CoordinatorRecord(key=TopicKey(name=name), value=None)]
        records.extend(self.set_configs(TOPIC_RESOURCE, name, {}).records)
        return CoordinatorResult(tuple(records), None)

    # ---- snapshot
    def snapshot(self) -> tuple[MetadataRecord, ...]:
        """Records that rebuild the whole state from nothing (no tombstones), in a
        fixed order: written after the log's history, they let the history go
        (server/metadata/metadata_log.py, `MetadataLog.compact`). Decided on an empty shard,
        so every key is written."""
        empty = MetadataShard()
        records: list[MetadataRecord] = []
        for topic in sorted(self._topics.values(), key=lambda t: t.name):
            records += empty.put_topic(topic).records
        for (kind, name), values in sorted(self._configs.items()):
            records += empty.set_configs(kind, name, values).records
        records += empty.alter_quotas(dict(sorted(self._quotas.items(), key=repr))).records
        upsertions = [
            ScramUpsertion(user, mechanism, credential)
            for user, credentials in sorted(self._scram.items())
            for mechanism, credential in sorted(credentials.items())
        ]
        records += empty.alter_scram(upsertions=upsertions, deletions=()).records
        records += empty.create_acls(sorted(self._acls), acls_max=len(self._acls)).records
        return tuple(records)

    # ---- replay
    def replay(self, record: MetadataRecord, offset: int = NO_OFFSET, /) -> None:
        """Apply one durable record (the only mutator)."""
        del offset  # the metadata log is never pruned below a live record
        self._image = None
        self.records_replayed += 1
        key, value = record.key, record.value
        if isinstance(key, ConfigKey):
            resource = (key.resource_type, key.resource_name)
            if value is None:
                values = self._configs.get(resource)
                if values is not None:
                    values.pop(key.name, None)
                    if not values:
                        del self._configs[resource]
            else:
                assert isinstance(value, ConfigValue)
                self._configs.setdefault(resource, {})[key.name] = value.value
        elif isinstance(key, AccessControlEntryKey):
            acl = acl_of(key)
            if value is None:
                self._acls.discard(acl)
            else:
                self._acls.add(acl)
        elif isinstance(key, ClientQuotaKey):
            entity = normalized_entity(tuple((p.entity_type, p.entity_name) for p in key.entity))
            if value is None:
                quota = self._quotas.get(entity)
                if quota is not None:
                    quota.pop(key.key, None)
                    if not quota:
                        del self._quotas[entity]
            else:
                assert isinstance(value, ClientQuotaValue)
                self._quotas.setdefault(entity, {})[key.key] = value.value
        elif isinstance(key, ScramCredentialKey):
            mechanism = MECHANISMS_BY_ID.get(key.mechanism)
            if mechanism is None:
                log.warning("skipping a SCRAM credential of unknown mechanism %d", key.mechanism)
                return
            if value is None:
                user = self._scram.get(key.name)
                if user is not None:
                    user.pop(mechanism.name, None)
                    if not user:
                        del self._scram[key.name]
            else:
                assert isinstance(value, ScramCredentialValue)
                self._scram.setdefault(key.name, {})[mechanism.name] = ScramCredential(
                    salt=value.salt,
                    stored_key=value.stored_key,
                    server_key=value.server_key,
                    iterations=value.iterations,
                )
        elif isinstance(key, TopicKey):
            if value is None:
                self._topics.pop(key.name, None)
            else:
                assert isinstance(value, TopicValue)
                self._topics[key.name] = TopicImage(
                    key.name, value.topic_id, value.partitions, value.internal
                )
        else:  # pragma: no cover - the codec decodes only the types above
            raise AssertionError(f"not a metadata record: {record!r}")


_ACL_VALUE = AccessControlEntryValue()


def acl_key(acl: AclBinding) -> AccessControlEntryKey:
    return AccessControlEntryKey(
        resource_type=int(acl.resource_type),
        resource_name=acl.name,
        pattern_type=int(acl.pattern_type),
        principal=acl.principal,
        host=acl.host,
        operation=int(acl.operation),
        permission_type=int(acl.permission),
    )


def acl_of(key: AccessControlEntryKey) -> AclBinding:
    return AclBinding(
        ResourceType(key.resource_type),
        key.resource_name,
        PatternType(key.pattern_type),
        key.principal,
        key.host,
        AclOperation(key.operation),
        PermissionType(key.permission_type),
    )


def _scram_key(user: str, mechanism: str) -> ScramCredentialKey:
    return ScramCredentialKey(name=user, mechanism=MECHANISMS[mechanism].type_id)
