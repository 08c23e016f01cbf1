"""All topics and partition logs of one data directory.

Owns: the data directory layout, the topics (name, topic id, partition count, config
overrides, internal flag: kept durable by a `TopicCatalog`, log/topics.py; the
metadata log in the broker), the cluster id, opening and recovering every partition
log on start, creating and deleting topics and partitions, per-topic effective
configs, and the producer-id allocator.

Layout of `<data_dir>`:
    meta.properties        cluster.id and node.id (topics.py)
    producer-ids           producer-id high-water mark (producer_ids.py)
    <topic>-<partition>/   one partition log (partition.py), with partition.metadata
    __cluster_metadata-0/  the metadata log (server/metadata/metadata_log.py): no topic, skipped
    <dir>.<hex>-delete     a deleted partition being removed (removed again on start)
    <dir>.<hex>-stray      a partition directory of a topic id the catalog does not
                           hold, set aside at open

Error codes (LogError.code): INVALID_TOPIC_EXCEPTION (bad or colliding name),
TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS (count < 1, above
limits.PARTITIONS_PER_TOPIC_MAX, not above the current count, or beyond
`shoal.max.partitions`), POLICY_VIOLATION (beyond `shoal.max.topics`), INVALID_CONFIG,
UNKNOWN_TOPIC_OR_PARTITION, KAFKA_STORAGE_ERROR. The topic and partition limits count
user topics only: the coordinators' internal topics (100 partitions by default) are
neither counted nor refused.

Durability order: creating a topic records it in the catalog first (a crash leaves a
topic whose partition directories are created on the next start). The disk work of a
creation, a growth or a config change can be done off the owner's thread: `plan_topic`,
`plan_partitions` and `plan_topic_configs` make a `TopicWrite` (log/topic_writes.py),
whose `run` (any thread) records the change durably, makes the new partition
directories durably and opens their logs (new objects nobody holds yet), and
`finish_topic` / `finish_topic_change` adopt it on the owner (no other topic change
may come between the two: the broker runs them in its change lane). `create_topic`,
`create_partitions` and `alter_topic_configs` do all three in place. Deleting renames
the partition directories away first, then records the deletion, then removes them (a
crash leaves at worst an empty topic, never old data under a new topic).

Start-up reconciles the directories with the catalog, as Kafka's log manager does
with the metadata image: a partition directory whose recorded topic id is not the id
the catalog holds for its name (a topic deleted, or created again, while the broker
was down; a creation whose record never became durable) is stray and set aside.

Change events (log/events.py): `events` tells its subscribers of every append and log
start move of a partition (the partition logs emit them) and of every topic created,
deleted or grown (emitted here once the change is durable).
"""

from __future__ import annotations

import dataclasses
import logging
import re
import shutil
import uuid
from pathlib import Path
from typing import Any

from shoal import limits
from shoal.clock import Clock
from shoal.config import (
    BrokerConfig,
    ConfigError,
    broker_keys,
    effective_topic_config,
    validate_topic_configs,
)
from shoal.log.api import LogError, TopicInfo
from shoal.log.events import LogEvents, TopicsChanged
from shoal.log.fileio import fsync_directory, storage_errors
from shoal.log.flush import FlushPlan
from shoal.log.partition import PartitionLog
from shoal.log.producer_ids import ProducerIdAllocator
from shoal.log.settings import PRODUCER_ID_EXPIRATION
from shoal.log.topic_writes import TopicWrite
from shoal.log.topics import (
    METADATA_LOG_DIR,
    METADATA_TOPIC,
    MemoryTopicCatalog,
    TopicCatalog,
    UuidSource,
    collision_key,
    load_or_create_meta,
    random_uuid,
    read_partition_metadata,
    validate_topic_name,
    write_partition_metadata,
)
from shoal.progress import Progress
from shoal.protocol.errors import ErrorCode

logger = logging.getLogger(__name__)

_DELETED_DIR = re.compile(r".+\.[0-9a-f]{32}-delete")


def partition_dir_name(topic: str, index: int) -> str:
    return f"{topic}-{index}"


class LogManager:
    def __init__(
        self,
        *,
        data_dir: Path,
        broker_config: BrokerConfig,
        clock: Clock,
        cluster_id: str,
        topics: dict[str, TopicInfo],
        producer_ids: ProducerIdAllocator,
        uuid_source: UuidSource,
        catalog: TopicCatalog,
    ) -> None:
        self._data_dir = data_dir
        self._broker_config = broker_config
        self._clock = clock
        self._cluster_id = cluster_id
        self._topics = topics
        self._topics_by_id = {info.topic_id: info for info in topics.values()}
        self._producer_ids = producer_ids
        self._uuid_source = uuid_source
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._catalog = catalog
        self._deleted_dirs: list[Path] = []
        """Renamed partition directories of deleted topics (`defer_delete`), not taken."""
        self.events = LogEvents()
        """Subscribe here to appends, log start moves and topic changes."""

    @classmethod
    def open(
        cls,
        *,
        data_dir: Path,
        broker_config: BrokerConfig,
        clock: Clock,
        uuid_source: UuidSource = uuid.uuid4,
        catalog: TopicCatalog | None = None,
    ) -> LogManager:
        """Open (creating if absent) the data directory and recover every partition
        log of the topics `catalog` holds (without one, a `MemoryTopicCatalog`: no
        topic outlives the manager). `uuid_source` draws topic and cluster ids
        (inject it for simulation)."""
        catalog = catalog or MemoryTopicCatalog()
        with storage_errors(f"opening data directory {data_dir}"):
            data_dir.mkdir(parents=True, exist_ok=True)
            cluster_id = load_or_create_meta(
                data_dir,
                cluster_id=broker_config.get(broker_keys.CLUSTER_ID),
                node_id=broker_config.node_id,
                uuid_source=uuid_source,
            )
            manager = cls(
                data_dir=data_dir,
                broker_config=broker_config,
                clock=clock,
                cluster_id=cluster_id,
                topics={info.name: info for info in catalog.load()},
                producer_ids=ProducerIdAllocator.open(data_dir),
                uuid_source=uuid_source,
                catalog=catalog,
            )
            manager._open_all_partitions()
        return manager

    def _open_all_partitions(self) -> None:
        expected = {
            partition_dir_name(info.name, index): (info, index)
            for info in self._topics.values()
            for index in range(info.partitions)
        }
        for entry in sorted(self._data_dir.iterdir()):
            if not entry.is_dir():
                continue
            if _DELETED_DIR.fullmatch(entry.name):
                logger.info("removing %s, left by an unfinished topic deletion", entry)
                _remove_tree(entry)
            elif entry.name == METADATA_LOG_DIR:
                continue  # the metadata log (server/metadata/metadata_log.py), no topic's
            elif entry.name not in expected and not entry.name.endswith("-stray"):
                recorded = read_partition_metadata(entry)
                if recorded is None or recorded in self._topics_by_id:
                    logger.warning("leaving alone %s: no known topic partition owns it", entry)
                    continue
                aside = self._renamed(entry, "stray")
                logger.warning(
                    "%s belongs to topic id %s, which no topic has; moving it to %s",
                    entry,
                    recorded,
                    aside,
                )
                entry.rename(aside)
                fsync_directory(self._data_dir)
        progress = Progress("recovered", "partitions", len(expected), logger=logger)
        try:
            for info, index in expected.values():
                self._logs[(info.name, index)] = self._open_partition(info, index)
                progress.advance()
            progress.finish()
        except BaseException:
            self.abandon()
            raise

    def _open_partition(self, info: TopicInfo, index: int) -> PartitionLog:
        directory = self._data_dir / partition_dir_name(info.name, index)
        if directory.exists():
            recorded = read_partition_metadata(directory)
            if recorded is not None and recorded != info.topic_id:
                aside = self._renamed(directory, "stray")
                logger.warning(
                    "%s belongs to topic id %s, not %s; moving it to %s",
                    directory,
                    recorded,
                    info.topic_id,
                    aside,
                )
                directory.rename(aside)
                fsync_directory(self._data_dir)
        log = PartitionLog.open(
            directory=directory,
            config=self._partition_config(info),
            clock=self._clock,
            events=self.events.for_partition(info.name, index),
        )
        if read_partition_metadata(directory) is None:
            write_partition_metadata(directory, info.topic_id)
        return log

    def _renamed(self, directory: Path, kind: str) -> Path:
        return directory.with_name(f"{directory.name}.{self._uuid_source().hex}-{kind}")

    def _partition_config(self, info: TopicInfo) -> dict[str, Any]:
        config = effective_topic_config(self._broker_config, info.configs)
        config[PRODUCER_ID_EXPIRATION.name] = self._broker_config.get(PRODUCER_ID_EXPIRATION)
        return config

    # -- queries

    @property
    def cluster_id(self) -> str:
        return self._cluster_id

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    def topics(self) -> list[TopicInfo]:
        """Every topic (the manager's own objects: do not modify them)."""
        return list(self._topics.values())

    def topic(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._topics_by_id.get(topic_id)

    def partition(self, topic: str, index: int) -> PartitionLog | None:
        return self._logs.get((topic, index))

    # -- topic changes

    def create_topic(
        self,
        name: str,
        *,
        partitions: int,
        configs: dict[str, Any],
        validate_only: bool = False,
        internal: bool = False,
    ) -> TopicInfo:
        """Raises LogError TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION,
        INVALID_PARTITIONS, POLICY_VIOLATION (topic/partition limits), INVALID_CONFIG,
        KAFKA_STORAGE_ERROR. Writes on the caller's thread: on the event loop, use
        `plan_topic`, run the plan in a worker, then `finish_topic`."""
        creation = self.plan_topic(name, partitions=partitions, configs=configs, internal=internal)
        if validate_only:
            return creation.info
        creation.run()
        return self.finish_topic(creation)

    def plan_topic(
        self,
        name: str,
        *,
        partitions: int,
        configs: dict[str, Any],
        internal: bool = False,
    ) -> TopicWrite:
        """Validate a creation (the errors of `create_topic`) and return what it
        writes (log/topic_writes.py); nothing changes until `finish_topic`."""
        validate_topic_name(name)
        if name == METADATA_TOPIC:
            raise LogError(
                ErrorCode.invalid_request,
                f"Creation of internal topic {METADATA_TOPIC} is prohibited.",
            )
        if name in self._topics:
            raise LogError(ErrorCode.topic_already_exists, f"topic {name!r} already exists")
        key = collision_key(name)
        for other in self._topics:
            if collision_key(other) == key:
                raise LogError(
                    ErrorCode.invalid_topic_exception,
                    f"topic {name!r} collides with existing topic {other!r} "
                    "('.' and '_' are interchangeable in metric names)",
                )
        if not 1 <= partitions <= limits.PARTITIONS_PER_TOPIC_MAX:
            raise LogError(
                ErrorCode.invalid_partitions,
                f"partition count {partitions} is not within 1..{limits.PARTITIONS_PER_TOPIC_MAX}",
            )
        typed = _typed_configs(configs)
        if not internal:
            self._check_limits(new_topics=1, new_partitions=partitions)
        info = TopicInfo(name, random_uuid(self._uuid_source), partitions, typed, internal)
        return self._plan(info, f"creating topic {name}", first_new=0)

    def finish_topic(self, creation: TopicWrite) -> TopicInfo:
        """Adopt a topic whose plan ran (its files are durable): open its partitions
        and announce it. Raises TOPIC_ALREADY_EXISTS if the name was taken meanwhile,
        KAFKA_STORAGE_ERROR if a partition cannot be opened."""
        info, name, partitions = creation.info, creation.info.name, creation.info.partitions
        creation.adopt()
        if name in self._topics:
            creation.discard()
            raise LogError(ErrorCode.topic_already_exists, f"topic {name!r} already exists")
        self._topics[name] = info
        self._topics_by_id[info.topic_id] = info
        try:
            with storage_errors(creation.context):
                self._adopt_partitions(creation, range(partitions))
        except LogError:
            creation.discard()
            self._forget_topic(info)
            raise
        self.events.topics_changed(TopicsChanged(created=(name,)))
        return info

    def delete_topic(self, name: str, *, defer_delete: bool = False) -> TopicInfo:
        """Close the topic's logs and remove its data; raises UNKNOWN_TOPIC_OR_PARTITION.
        With `defer_delete` the partition directories are only renamed here (the
        deletion is durable then): remove `take_deleted_paths()` off the loop."""
        info = self._topics.get(name)
        if info is None:
            raise LogError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
        for index in range(info.partitions):
            log = self._logs.pop((name, index), None)
            if log is not None:
                log.abandon()
        doomed = []
        with storage_errors(f"deleting topic {name}"):
            for index in range(info.partitions):
                directory = self._data_dir / partition_dir_name(name, index)
                if directory.exists():
                    renamed = self._renamed(directory, "delete")
                    directory.rename(renamed)
                    doomed.append(renamed)
            fsync_directory(self._data_dir)
            self._catalog.remove(info)
            self._forget_topic(info)
        if defer_delete:
            self._deleted_dirs.extend(doomed)
        else:
            for directory in doomed:
                _remove_tree(directory)
        self.events.topics_changed(TopicsChanged(deleted=((name, info.partitions),)))
        return info

    def create_partitions(self, name: str, *, count: int, validate_only: bool = False) -> None:
        """Grow the topic to `count` partitions (the errors of `plan_partitions`).
        Writes on the caller's thread (see `create_topic`)."""
        growth = self.plan_partitions(name, count=count)
        if not validate_only:
            growth.run()
            self.finish_topic_change(growth)

    def plan_partitions(self, name: str, *, count: int) -> TopicWrite:
        """Validate growing the topic to `count` partitions and return what it writes;
        nothing changes until `finish_topic_change`. Raises UNKNOWN_TOPIC_OR_PARTITION,
        INVALID_PARTITIONS (not above the current count, above the per-topic maximum or
        beyond `shoal.max.partitions`)."""
        info = self._existing(name)
        if count <= info.partitions:
            raise LogError(
                ErrorCode.invalid_partitions,
                f"topic {name!r} already has {info.partitions} partitions; {count} would "
                "not add any",
            )
        if count > limits.PARTITIONS_PER_TOPIC_MAX:
            raise LogError(
                ErrorCode.invalid_partitions,
                f"partition count {count} is above the maximum {limits.PARTITIONS_PER_TOPIC_MAX}",
            )
        if not info.internal:
            self._check_limits(new_topics=0, new_partitions=count - info.partitions)
        grown = dataclasses.replace(info, partitions=count)
        return self._plan(grown, f"adding partitions to {name}", first_new=info.partitions)

    def alter_topic_configs(self, name: str, configs: dict[str, Any]) -> None:
        """Replace the topic's overrides (already validated) and apply them live.
        Writes on the caller's thread (see `create_topic`)."""
        change = self.plan_topic_configs(name, configs)
        change.run()
        self.finish_topic_change(change)

    def plan_topic_configs(self, name: str, configs: dict[str, Any]) -> TopicWrite:
        """What replacing the topic's overrides (already validated) writes; nothing
        changes until `finish_topic_change`. Raises UNKNOWN_TOPIC_OR_PARTITION."""
        info = self._existing(name)
        altered = dataclasses.replace(info, configs=_typed_configs(configs))
        return self._plan(altered, f"altering configs of {name}", first_new=info.partitions)

    def finish_topic_change(self, change: TopicWrite) -> None:
        """Adopt a growth or config change whose plan ran: the topic takes its count
        and configs, the new partitions are opened, the configs applied live and a
        growth announced. Raises UNKNOWN_TOPIC_OR_PARTITION if the topic was deleted
        meanwhile, KAFKA_STORAGE_ERROR if a partition cannot be opened (the topic
        keeps its former count then)."""
        change.adopt()
        info = self._topics.get(change.info.name)
        if info is None or info.topic_id != change.info.topic_id:
            change.discard()
            raise LogError(
                ErrorCode.unknown_topic_or_partition, f"topic {change.info.name!r} does not exist"
            )
        previous = (info.partitions, info.configs)
        info.partitions, info.configs = change.info.partitions, change.info.configs
        try:
            with storage_errors(change.context):
                self._adopt_partitions(change, range(previous[0], info.partitions))
        except LogError:
            change.discard()
            info.partitions, info.configs = previous
            raise
        if info.configs != previous[1]:
            self._apply_configs(info)
        if info.partitions != previous[0]:
            self.events.topics_changed(TopicsChanged(grown=(info.name,)))

    def _existing(self, name: str) -> TopicInfo:
        info = self._topics.get(name)
        if info is None:
            raise LogError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
        return info

    def _plan(self, info: TopicInfo, context: str, *, first_new: int) -> TopicWrite:
        """The write of `info` (new, or replacing the topic of its name) in the
        catalog, with its partitions from `first_new` on made."""
        return TopicWrite(
            info=info,
            context=context,
            data_dir=self._data_dir,
            catalog=self._catalog,
            new_partitions={
                index: self._data_dir / partition_dir_name(info.name, index)
                for index in range(first_new, info.partitions)
            },
            partition_config=self._partition_config(info),
            clock=self._clock,
            events=self.events,
        )

    def _adopt_partitions(self, change: TopicWrite, indexes: range) -> None:
        """Take the logs the change's run opened (and open any other) for `indexes`;
        on a failure close them all and raise."""
        name = change.info.name
        info = self._topics[name]
        try:
            for index in indexes:
                opened = change.opened.pop(index, None)
                self._logs[(name, index)] = opened or self._open_partition(info, index)
        except LogError:
            change.discard()
            for index in indexes:
                log = self._logs.pop((name, index), None)
                if log is not None:
                    log.abandon()
            raise

    def update_broker_config(self, broker_config: BrokerConfig) -> None:
        self._broker_config = broker_config
        for info in self._topics.values():
            self._apply_configs(info)

    def _apply_configs(self, info: TopicInfo) -> None:
        config = self._partition_config(info)
        for index in range(info.partitions):
            log = self._logs.get((info.name, index))
            if log is not None:
                log.update_config(config)

    def _check_limits(self, *, new_topics: int, new_partitions: int) -> None:
        user_topics = [info for info in self._topics.values() if not info.internal]
        topics_max = self._broker_config.get(broker_keys.SHOAL_MAX_TOPICS)
        if len(user_topics) + new_topics > topics_max:
            raise LogError(
                ErrorCode.policy_violation,
                f"the broker holds {len(user_topics)} topics, the limit set by "
                f"shoal.max.topics={topics_max}",
            )
        partitions_max = self._broker_config.get(broker_keys.SHOAL_MAX_PARTITIONS)
        total = sum(info.partitions for info in user_topics)
        if total + new_partitions > partitions_max:
            raise LogError(
                ErrorCode.invalid_partitions,
                f"{new_partitions} more partitions would exceed "
                f"shoal.max.partitions={partitions_max} (the broker holds {total})",
            )

    def _forget_topic(self, info: TopicInfo) -> None:
        self._topics.pop(info.name, None)
        self._topics_by_id.pop(info.topic_id, None)

    # -- producers, housekeeping, shutdown

    def allocate_producer_id(self) -> int:
        """A producer id never handed out before, even across restarts."""
        return self._producer_ids.allocate()

    def enforce_retention(self, *, now_wall_ms: int, defer_delete: bool = False) -> int:
        """Apply retention to every partition; returns bytes freed. A partition that
        fails is logged and skipped. With `defer_delete` the segment files are only
        renamed here: remove `take_deleted_paths()` off the loop."""
        freed = 0
        for key, log in list(self._logs.items()):
            try:
                freed += log.enforce_retention(now_wall_ms=now_wall_ms, defer_delete=defer_delete)
            except LogError as exc:
                logger.warning("retention of %s-%d failed: %s", key[0], key[1], exc)
        return freed

    def take_deleted_paths(self) -> list[Path]:
        """Every partition's segment files and every deleted topic's directories set
        aside by a `defer_delete` deletion, to remove with `log.fileio.remove_paths` on
        any thread (handed over once)."""
        paths, self._deleted_dirs = self._deleted_dirs, []
        return paths + [path for log in self._logs.values() for path in log.take_deleted_paths()]

    def flush_if_due(self, *, now_ms: int) -> None:
        """fsync here every partition whose unflushed data is older than flush.ms."""
        for log, plan in self.flush_plans_due(now_ms=now_ms):
            plan.run()
            self.finish_flush(log, plan)

    def flush_plans_due(self, *, now_ms: int) -> list[tuple[PartitionLog, FlushPlan]]:
        """The fsyncs flush.ms asks for now, as plans to run off the owner's thread:
        run each, then `finish_flush(log, plan)` on the owner (see log/flush.py)."""
        plans = []
        for log in list(self._logs.values()):
            try:
                plan = log.flush_plan_if_due(now_ms=now_ms)
            except LogError as exc:
                logger.warning("flush of %s failed: %s", log.directory.name, exc)
                continue
            if plan is not None:
                plans.append((log, plan))
        return plans

    @staticmethod
    def finish_flush(log: PartitionLog, plan: FlushPlan) -> None:
        """`log.finish_flush(plan)`, with a failure logged (the partition is offline
        then) instead of raised: for the background flusher, which has no client."""
        try:
            log.finish_flush(plan)
        except LogError as exc:
            logger.warning("flush of %s failed: %s", log.directory.name, exc)

    def close(self) -> None:
        """Close every partition log cleanly; raises the first failure after trying all."""
        doomed, self._deleted_dirs = self._deleted_dirs, []
        for directory in doomed:
            _remove_tree(directory)
        first_error: LogError | None = None
        for log in self._logs.values():
            try:
                log.close()
            except LogError as exc:
                logger.error("closing %s failed: %s", log.directory, exc)
                first_error = first_error or exc
        self._logs.clear()
        if first_error is not None:
            raise first_error

    def abandon(self) -> None:
        """Let go of every file without shutdown steps, as a crash would (tests)."""
        for log in self._logs.values():
            log.abandon()
        self._logs.clear()


def _typed_configs(configs: dict[str, Any]) -> dict[str, Any]:
    try:
        return validate_topic_configs(configs)
    except ConfigError as exc:
        raise LogError(exc.code, str(exc)) from exc


def _remove_tree(directory: Path) -> None:
    try:
        shutil.rmtree(directory)
    except OSError as exc:
        logger.warning("could not remove %s (will retry on next start): %s", directory, exc)
