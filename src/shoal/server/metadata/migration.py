"""Upgrade: the metadata files of older versions, moved into the metadata log once.

Before the metadata log (server/metadata/metadata_log.py), each kind of cluster metadata was a
file in the data directory, rewritten whole on each change. At start-up, after the
log is replayed, each such file still present is read once (in the format that
version wrote), written to the log as the records that make the same state (one
durable write per file), and renamed `<name>.migrated`, so the next start skips it
and an operator can still read it. A crash between the write and the rename is
harmless: the next start migrates the file again, and every migration write is a
whole-value write (the same records again, or none).

An unreadable file stops the start (OSError), as it did before: silently dropping,
say, every ACL would open the cluster.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shoal import limits
from shoal.clock import Clock
from shoal.config import BrokerConfig, ConfigError, parse_properties
from shoal.coordinator.result import CoordinatorResult
from shoal.group.configs import render_overrides
from shoal.log.fileio import fsync_directory, read_file
from shoal.metadata.image import TopicImage
from shoal.metadata.records import (
    BROKER_RESOURCE,
    CLIENT_METRICS_RESOURCE,
    GROUP_RESOURCE,
    TOPIC_RESOURCE,
    MetadataRecord,
)
from shoal.metadata.shard import ScramUpsertion
from shoal.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from shoal.security.authorizer import AclBinding
from shoal.security.quota import Entity
from shoal.security.scram import MECHANISMS, ScramCredential
from shoal.server.metadata.client_metrics_configs import validate as validate_client_metrics
from shoal.server.metadata.dynamic_config import DynamicLayer
from shoal.server.metadata.group_config_store import parse_stored
from shoal.server.metadata.metadata_log import MetadataLog
from shoal.server.metadata.quota_store import entity_problem, key_problem, value_problem
from shoal.server.refused import Refused

if TYPE_CHECKING:
    from shoal.metadata.shard import MetadataShard

log = logging.getLogger(__name__)

MIGRATED_SUFFIX = ".migrated"
TOPICS_FILE = "topics.json"
ACLS_FILE = "acls.json"
QUOTAS_FILE = "client-quotas.json"
SCRAM_FILE = "scram-credentials.json"
GROUP_CONFIGS_FILE = "group-configs.json"
CLIENT_METRICS_FILE = "client-metrics-configs.json"

Migration = Callable[
    ["MetadataShard", bytes, Path, BrokerConfig], "CoordinatorResult[MetadataRecord, Any]"
]
"""What a file's bytes become: a write decided on the shard (raises OSError)."""


def open_metadata_log(config: BrokerConfig, clock: Clock) -> MetadataLog:
    """The metadata log of `config.data_dir`, replayed, with every old metadata file
    there migrated into it. Raises LogError (the log) or OSError (an old file)."""
    metadata = MetadataLog.open(config, clock)
    for name, migration in _MIGRATIONS:
        _migrate(metadata, config.data_dir / name, migration, config)
    return metadata


def _migrate(metadata: MetadataLog, path: Path, migration: Migration, config: BrokerConfig) -> None:
    """Write what the old file `path` holds, then rename it aside."""
    data = read_file(path)
    if data is None:
        return
    result = migration(metadata.shard, data, path, config)
    metadata.write_now_in_batches(result.records)
    aside = path.with_name(path.name + MIGRATED_SUFFIX)
    path.rename(aside)
    fsync_directory(path.parent)
    log.info(
        "migrated %s into the metadata log (%d records); the old file is now %s",
        path,
        len(result.records),
        aside,
    )


def _document(data: bytes, path: Path, *, bytes_max: int) -> Any:
    """The JSON document of an old file at format version 1 (raises OSError)."""
    if len(data) > bytes_max:
        raise OSError(f"{path} is larger than {bytes_max} bytes")
    try:
        document = json.loads(data)
        if document["version"] != 1:
            raise ValueError(f"unsupported version {document['version']!r}")
    except (ValueError, KeyError, TypeError) as exc:
        raise OSError(f"{path} is unreadable: {exc}") from exc
    return document


# ---- acls.json: {"version": 1, "acls": [[type, name, pattern, principal, host, operation,
# permission], ...]} with Kafka's enum names


def _acls(
    shard: MetadataShard, data: bytes, path: Path, _config: BrokerConfig
) -> CoordinatorResult[MetadataRecord, Any]:
    document = _document(data, path, bytes_max=limits.ACL_FILE_BYTES_MAX)
    try:
        acls = [_acl(row) for row in document["acls"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise OSError(f"{path} is unreadable: {exc}") from exc
    for acl in acls:
        problem = acl.problem()
        if problem is not None:
            raise OSError(f"{path} holds an invalid ACL {acl}: {problem}")
    return shard.create_acls(acls, acls_max=max(limits.ACLS_MAX, len(acls)))


def _acl(row: object) -> AclBinding:
    if not isinstance(row, list) or len(row) != 7 or not all(isinstance(v, str) for v in row):
        raise ValueError(f"malformed ACL row {row!r}")
    kind, name, pattern, principal, host, operation, permission = row
    return AclBinding(
        ResourceType[kind],
        name,
        PatternType[pattern],
        principal,
        host,
        AclOperation[operation],
        PermissionType[permission],
    )


# ---- client-quotas.json: {"version": 1, "quotas": [{"entity": [[type, name-or-null], ...],
# "values": {key: value}}, ...]}


def _quotas(
    shard: MetadataShard, data: bytes, path: Path, _config: BrokerConfig
) -> CoordinatorResult[MetadataRecord, Any]:
    document = _document(data, path, bytes_max=limits.QUOTA_FILE_BYTES_MAX)
    quotas: dict[Entity, dict[str, float]] = {}
    try:
        for row in document["quotas"]:
            entity = tuple((str(kind), name) for kind, name in row["entity"])
            values = {str(k): float(v) for k, v in row["values"].items()}
            problem = entity_problem(entity) or next(
                filter(
                    None,
                    (key_problem(entity, k) or value_problem(k, v) for k, v in values.items()),
                ),
                None,
            )
            if problem is not None:
                raise ValueError(problem)
            quotas[entity] = values
    except (ValueError, KeyError, TypeError) as exc:
        raise OSError(f"{path} is unreadable: {exc}") from exc
    return shard.alter_quotas(quotas)


# ---- scram-credentials.json: {"version": 1, "users": {user: {mechanism: {"salt",
# "stored_key", "server_key" (base64), "iterations"}}}}


def _scram(
    shard: MetadataShard, data: bytes, path: Path, _config: BrokerConfig
) -> CoordinatorResult[MetadataRecord, Any]:
    document = _document(data, path, bytes_max=limits.METADATA_FILE_BYTES_MAX)
    try:
        upsertions = [
            ScramUpsertion(
                str(user),
                mechanism,
                ScramCredential(
                    salt=base64.b64decode(c["salt"]),
                    stored_key=base64.b64decode(c["stored_key"]),
                    server_key=base64.b64decode(c["server_key"]),
                    iterations=int(c["iterations"]),
                ),
            )
            for user, creds in document["users"].items()
            for mechanism, c in creds.items()
            if mechanism in MECHANISMS
        ]
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise OSError(f"{path} is unreadable: {exc}") from exc
    return shard.alter_scram(upsertions=upsertions, deletions=())


# ---- group-configs.json: {"version": 1, "groups": {group id: {key: value as Kafka shows
# it}}}; entries that no longer parse are skipped with a warning, as loading them was


def _group_configs(
    shard: MetadataShard, data: bytes, path: Path, _config: BrokerConfig
) -> CoordinatorResult[MetadataRecord, Any]:
    document = _document(data, path, bytes_max=limits.METADATA_FILE_BYTES_MAX)
    groups = document.get("groups")
    if not isinstance(groups, dict):
        raise OSError(f"{path} is unreadable: malformed groups")
    records: list[MetadataRecord] = []
    for group_id, raw in groups.items():
        if group_id:
            typed = parse_stored(str(group_id), raw)
            records += shard.set_configs(
                GROUP_RESOURCE, str(group_id), render_overrides(typed)
            ).records
    return CoordinatorResult(tuple(records), None)


# ---- dynamic-broker.properties and dynamic-cluster-default.properties: the two dynamic
# broker layers as properties (an unreadable one was ignored with a warning; still is)


def _layer(layer: DynamicLayer) -> Migration:
    def migration(
        shard: MetadataShard, data: bytes, path: Path, config: BrokerConfig
    ) -> CoordinatorResult[MetadataRecord, Any]:
        try:
            values = parse_properties(data.decode("utf-8"), source=str(path))
        except (ConfigError, UnicodeDecodeError) as exc:
            log.warning("ignoring unreadable %s: %s", path, exc)
            values = {}
        return shard.set_configs(BROKER_RESOURCE, layer.resource_name(config.node_id), values)

    return migration


# ---- client-metrics-configs.json: {"version": 1, "resources": {name: {key: value}}};
# resources that no longer validate are skipped with a warning, as loading them was


def _client_metrics(
    shard: MetadataShard, data: bytes, path: Path, _config: BrokerConfig
) -> CoordinatorResult[MetadataRecord, Any]:
    document = _document(data, path, bytes_max=limits.METADATA_FILE_BYTES_MAX)
    resources = document.get("resources")
    if not isinstance(resources, dict):
        raise OSError(f"{path} is unreadable: malformed resources")
    records: list[MetadataRecord] = []
    for name, raw in resources.items():
        try:
            settings = validate_client_metrics(str(name), dict(raw))
        except (Refused, TypeError, ValueError) as exc:
            log.warning("ignoring persisted client metrics resource %r: %s", name, exc)
            continue
        records += shard.set_configs(CLIENT_METRICS_RESOURCE, str(name), settings).records
    return CoordinatorResult(tuple(records), None)


# ---- topics.json: {"version": 1, "topics": [{"name", "topic_id" (canonical UUID text),
# "partitions", "configs" (overrides as the strings Kafka shows), "internal"}]}; an
# unreadable one stops the start (KAFKA_STORAGE_ERROR before, OSError now)


def _topics(
    shard: MetadataShard, data: bytes, path: Path, _config: BrokerConfig
) -> CoordinatorResult[MetadataRecord, Any]:
    try:
        document = json.loads(data)
        if document.get("version") != 1:
            raise ValueError(f"unknown version {document.get('version')!r}")
        records: list[MetadataRecord] = []
        for entry in document["topics"]:
            name = str(entry["name"])
            topic = TopicImage(
                name,
                uuid.UUID(entry["topic_id"]),
                int(entry["partitions"]),
                bool(entry.get("internal", False)),
            )
            configs = {str(k): str(v) for k, v in entry.get("configs", {}).items() if v is not None}
            records += shard.put_topic(topic).records
            records += shard.set_configs(TOPIC_RESOURCE, name, configs).records
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise OSError(f"{path} is unreadable: {exc}") from exc
    return CoordinatorResult(tuple(records), None)


_MIGRATIONS: list[tuple[str, Migration]] = [
    (TOPICS_FILE, _topics),
    (ACLS_FILE, _acls),
    (QUOTAS_FILE, _quotas),
    (SCRAM_FILE, _scram),
    (GROUP_CONFIGS_FILE, _group_configs),
    (DynamicLayer.BROKER.value, _layer(DynamicLayer.BROKER)),
    (DynamicLayer.CLUSTER_DEFAULT.value, _layer(DynamicLayer.CLUSTER_DEFAULT)),
    (CLIENT_METRICS_FILE, _client_metrics),
]
