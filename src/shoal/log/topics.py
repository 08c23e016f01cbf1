"""Topic names, ids, where the topic list is kept, and the metadata files of a data
directory.

Owns:
- Kafka's topic-name rules (`validate_topic_name`, `collision_key`);
- id generation as Kafka does it (`random_uuid`): never the zero id or the reserved
  metadata-topic id 1, and redrawn while its URL-safe base64 form starts with '-';
- `TopicCatalog`, where the log manager's list of topics is durable: in the broker
  the metadata log (server/metadata/topic_catalog.py, docs/design/metadata-log.md), with a topic's
  config overrides kept as the strings Kafka shows (`render_configs`) and re-parsed
  on load (`parse_configs`); `MemoryTopicCatalog` for a bare log manager (tools,
  tests), which forgets its topics when it closes;
- `meta.properties` (Kafka's KRaft form: version=1, cluster.id, node.id);
- `partition.metadata` in each partition directory (Kafka's form: "version: 0",
  "topic_id: <base64>"), so a directory left by another topic is never adopted;
- a new partition directory made durable in one go (`prepare_partition_directory`:
  an empty segment and partition.metadata), safe on any thread (`TopicWrite`,
  log/topic_writes.py, runs it in a disk worker).

Every one of these files is replaced atomically (temp file, fsync, rename, directory
fsync); an unreadable one stops start-up with KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from shoal import limits
from shoal.config import TOPIC_KEYS, ConfigError, parse_properties, render, validate_topic_configs
from shoal.log.api import LogError, TopicInfo
from shoal.log.fileio import fsync_directory, read_file, write_atomic, write_file
from shoal.log.segment import Segment
from shoal.protocol.errors import ErrorCode

logger = logging.getLogger(__name__)

META_FILE = "meta.properties"
PARTITION_METADATA_FILE = "partition.metadata"
METADATA_TOPIC = "__cluster_metadata"
"""Kafka's metadata log's name: no topic may take it (Kafka's ControllerApis refuses
its creation); the metadata log lives in `METADATA_LOG_DIR` (server/metadata/metadata_log.py)."""
METADATA_LOG_DIR = f"{METADATA_TOPIC}-0"
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")

UuidSource = Callable[[], uuid.UUID]


def validate_topic_name(name: str) -> None:
    """Raise INVALID_TOPIC_EXCEPTION unless `name` is a legal Kafka topic name, with
    Kafka's message (its Topic.validate: the same checks in the same order)."""
    problem = None
    if not name:
        problem = "the empty string is not allowed"
    elif name in (".", ".."):
        problem = f"'{name}' is not allowed"
    elif len(name) > limits.TOPIC_NAME_LENGTH_MAX:
        problem = (
            f"the length of '{name}' is longer than the max allowed length "
            f"{limits.TOPIC_NAME_LENGTH_MAX}"
        )
    elif not _LEGAL_NAME.fullmatch(name):
        problem = (
            f"'{name}' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'"
        )
    if problem is not None:
        raise LogError(ErrorCode.invalid_topic_exception, f"Topic name is invalid: {problem}")


def collision_key(name: str) -> str:
    """Kafka refuses two topics whose names differ only by '.' versus '_' (their
    metric names would collide)."""
    return name.replace(".", "_")


def uuid_to_base64(value: uuid.UUID) -> str:
    """Kafka's text form of a UUID: URL-safe base64 of its 16 bytes, no padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def uuid_from_base64(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def random_uuid(source: UuidSource = uuid.uuid4) -> uuid.UUID:
    """A random id as Kafka's Uuid.randomUuid draws it."""
    while True:
        value = source()
        if value.int > 1 and not uuid_to_base64(value).startswith("-"):
            return value


# -- the topic list


class TopicCatalog(Protocol):
    """Where the topic list is durable. The log manager calls `load` once when it
    opens, `record` in a topic change's disk work (`TopicWrite.run`, on any thread,
    one change at a time) and then the adoption `record` returned, on its owner,
    when it adopts the change; `remove` on its owner when it deletes a topic."""

    def load(self) -> list[TopicInfo]:
        """Every topic (new objects, the manager's from then on)."""
        ...

    def record(self, info: TopicInfo) -> Callable[[], None]:
        """Make `info` (a new topic, or a topic's new count or overrides) durable;
        raises OSError. Returns the adoption, to run on the owner."""
        ...

    def remove(self, info: TopicInfo) -> None:
        """Make the deletion of `info` durable, and adopt it; raises OSError."""
        ...


class MemoryTopicCatalog:
    """A `TopicCatalog` that keeps nothing: a bare log manager's (tools, tests)."""

    def load(self) -> list[TopicInfo]:
        return []

    def record(self, info: TopicInfo) -> Callable[[], None]:
        return _nothing

    def remove(self, info: TopicInfo) -> None:
        pass


def _nothing() -> None:
    pass


def render_configs(configs: dict[str, Any]) -> dict[str, str]:
    """A topic's typed overrides as the strings Kafka shows (how they are stored)."""
    rendered = {}
    for key, value in sorted(configs.items()):
        text = render(TOPIC_KEYS[key], value)
        if text is not None:
            rendered[key] = text
    return rendered


def parse_configs(topic: str, stored: Mapping[str, str | None]) -> dict[str, Any]:
    """A topic's stored overrides, typed; an entry that no longer validates is
    dropped with a warning."""
    typed: dict[str, Any] = {}
    for key, value in stored.items():
        try:
            typed.update(validate_topic_configs({key: value}))
        except ConfigError as exc:
            logger.warning("topic %s: dropping stored config override (%s)", topic, exc)
    return typed


# -- meta.properties


def load_or_create_meta(
    data_dir: Path, *, cluster_id: str | None, node_id: int, uuid_source: UuidSource
) -> str:
    """The data directory's cluster id: the stored one, else the configured one, else
    a new random one. Raises if the stored identity disagrees with the config."""
    stored = stored_cluster_id(data_dir, cluster_id=cluster_id, node_id=node_id)
    if stored is not None:
        return stored
    chosen = cluster_id or uuid_to_base64(random_uuid(uuid_source))
    text = f"version=1\ncluster.id={chosen}\nnode.id={node_id}\n"
    write_atomic(data_dir / META_FILE, text.encode())
    return chosen


def stored_cluster_id(data_dir: Path, *, cluster_id: str | None, node_id: int) -> str | None:
    """The cluster id the data directory's meta.properties holds, or None without one;
    reads only. Raises if the stored identity disagrees with the config, so a broker
    checks it before it opens anything there."""
    path = data_dir / META_FILE
    data = read_file(path)
    if data is None:
        return None
    try:
        properties = parse_properties(data.decode(), source=str(path))
    except (ConfigError, UnicodeDecodeError) as exc:
        raise LogError(ErrorCode.kafka_storage_error, f"{path} is unreadable: {exc}") from exc
    stored = properties.get("cluster.id")
    if not stored:
        raise LogError(ErrorCode.kafka_storage_error, f"{path} has no cluster.id")
    if cluster_id is not None and cluster_id != stored:
        raise LogError(
            ErrorCode.inconsistent_cluster_id,
            f"cluster.id {cluster_id} is configured but {path} holds {stored}",
        )
    stored_node = properties.get("node.id")
    if stored_node is not None and stored_node != str(node_id):
        raise LogError(
            ErrorCode.kafka_storage_error,
            f"node.id {node_id} is configured but {path} holds node.id {stored_node}",
        )
    return stored


# -- partition.metadata


def _partition_metadata(topic_id: uuid.UUID) -> bytes:
    return f"version: 0\ntopic_id: {uuid_to_base64(topic_id)}\n".encode()


def write_partition_metadata(directory: Path, topic_id: uuid.UUID) -> None:
    write_atomic(directory / PARTITION_METADATA_FILE, _partition_metadata(topic_id))


def read_partition_metadata(directory: Path) -> uuid.UUID | None:
    """The topic id recorded in a partition directory, or None if none is readable."""
    data = read_file(directory / PARTITION_METADATA_FILE)
    if data is None:
        return None
    for line in data.decode("ascii", errors="replace").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            try:
                return uuid_from_base64(value.strip())
            except (ValueError, binascii.Error):
                return None
    return None


def prepare_partition_directory(directory: Path, topic_id: uuid.UUID, *, sync: bool) -> bool:
    """Create `directory` as a new, empty partition: one empty segment at offset 0 and
    its partition.metadata; with `sync`, their entries durable (the parent's entry is
    not: fsync the parent after). Without `sync` nothing is fsynced, and the partition's
    log must be opened with `directory_durable=False`: its first flush fsyncs the
    directory (PartitionLog's invariants, as Kafka's `LocalLog.flush`); before any
    record of it is durable a crash can only lose what opening makes again, the empty
    segment and partition.metadata. The latter is never fsynced here: it repeats the
    topic catalog (the metadata log, written durably first), and `LogManager` writes
    it again, durably, when it is missing, empty, cut or unreadable. A fresh broker
    makes the 100 partitions of `__consumer_offsets` and `__share_group_state` at
    start without `sync` (docs/performance/startup.md). Returns False, touching nothing, if the
    directory exists: opening the partition decides whose it is. Safe on any thread."""
    try:
        directory.mkdir()
    except FileExistsError:
        return False
    Segment.create(directory, 0).close()
    write_file(directory / PARTITION_METADATA_FILE, _partition_metadata(topic_id), sync=False)
    if sync:
        fsync_directory(directory)
    return True
