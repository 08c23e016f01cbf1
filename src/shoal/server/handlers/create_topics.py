"""CreateTopics (19) v2-v7: create topics, or with ValidateOnly check that they could be.

A request asking for more than limits.PARTITIONS_PER_CREATE_TOPICS_MAX partitions in
all (Kafka's controller limit) fails every topic with POLICY_VIOLATION. Then per
topic, in Kafka's order: a name repeated in the request gets INVALID_REQUEST, an
existing topic TOPIC_ALREADY_EXISTS; NumPartitions -1 means `num.partitions` and any
other value below 1 is INVALID_PARTITIONS; ReplicationFactor -1 or 1 is accepted, 0 or
below INVALID_REPLICATION_FACTOR, above 1 too (a single node). Manual Assignments need
NumPartitions and ReplicationFactor at -1 (else INVALID_REQUEST), partition indexes 0..n-1
and every replica list exactly [this node] (else INVALID_REPLICA_ASSIGNMENT); they give
the partition count. Configs are topic keys validated as a whole (INVALID_CONFIG naming
the key). Then the log manager creates the topic: INVALID_TOPIC_EXCEPTION for a bad
name, INVALID_PARTITIONS / POLICY_VIOLATION at Shoal's limits.

From v5 a success carries the partition count, replication factor 1 and every config
of the topic with its source (as DescribeConfigs shows it); v7 adds the topic id.

Each topic is created in the broker's change lane (`services.disk.changes`): decided
on the topics every earlier change left, its metadata records (server/metadata/topic_catalog.py)
and its partition directories written and fsynced in a disk worker, then adopted and answered. Until
then other requests (Metadata, Produce) do not see it; a failed write answers
KAFKA_STORAGE_ERROR.

Authorization (Kafka's ControllerApis.createTopics): CREATE on the cluster, or on each
topic (TOPIC_AUTHORIZATION_FAILED "Authorization failed."); a created topic the
principal may not DESCRIBE_CONFIGS is answered without its configs, partitions or
replication factor (TopicConfigErrorCode TOPIC_AUTHORIZATION_FAILED, v5+).
"""

from __future__ import annotations

import datetime
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from shoal import limits
from shoal.config import ConfigError, broker_keys, validate_topic_configs
from shoal.log.api import LogError, TopicInfo
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common.replica_assignments import replica_list_problem
from shoal.server.metadata.config_resources import topic_entries
from shoal.server.refused import Refused
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 19
_ZERO = datetime.timedelta(0)
_DEFAULT = -1
_REPLICATION_FACTOR = 1
_TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."


@dataclass(frozen=True, slots=True)
class _Plan:
    partitions: int
    configs: dict[str, Any]


@api(API_KEY, 2, 7)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    counts = Counter(t.name for t in request.topics)
    names = [t.name for t in request.topics]
    if authz.cluster_allowed(ctx, AclOperation.CREATE):
        creatable = frozenset(names)
    else:
        creatable = authz.filter_allowed(ctx, AclOperation.CREATE, authz.TOPIC, names)
    configs_visible = authz.filter_allowed(ctx, AclOperation.DESCRIBE_CONFIGS, authz.TOPIC, names)
    results = []
    answered: set[str] = set()
    # Kafka's controller counts the topics its ControllerApis passes on (neither
    # repeated nor unauthorized); its refusal then answers every topic of the request
    effective = [t for t in request.topics if counts[t.name] == 1 and t.name in creatable]
    asked = _partitions_asked(ctx, effective)
    for topic in request.topics:
        if topic.name in answered:
            continue
        answered.add(topic.name)
        try:
            if asked > limits.PARTITIONS_PER_CREATE_TOPICS_MAX:
                raise Refused(ErrorCode.policy_violation, _TOO_MANY_PARTITIONS)
            if counts[topic.name] > 1:
                raise Refused(ErrorCode.invalid_request, "Duplicate topic name.")
            if topic.name not in creatable:
                raise Refused(ErrorCode.topic_authorization_failed, "Authorization failed.")
            info = await ctx.services.disk.changes.run(
                _creation(ctx, topic, validate_only=bool(request.validate_only))
            )
        except Refused as exc:
            log.info(
                "CreateTopics of %r refused (%s): %s (client %s)",
                topic.name,
                exc.code.name,
                exc.message,
                ctx.client_id,
            )
            results.append(_failed(schema, topic.name, exc.code, exc.message))
            continue
        results.append(_created(schema, ctx, info, configs_visible=info.name in configs_visible))
    return schema.response(throttle_time=_ZERO, topics=tuple(results))


def _partitions_asked(ctx: RequestContext, topics: list[Any]) -> int:
    """The partitions a request asks for, as Kafka's controller counts them against
    limits.PARTITIONS_PER_CREATE_TOPICS_MAX: the manual assignments' count, else
    NumPartitions (`num.partitions` for -1; nothing for another value below 1)."""
    default = ctx.services.config.current.get(broker_keys.NUM_PARTITIONS)
    total = 0
    for topic in topics:
        partitions = int(topic.num_partitions)
        if topic.assignments:
            total += len(topic.assignments)
        elif partitions == _DEFAULT:
            total += default
        elif partitions > 0:
            total += partitions
    return total


def _creation(
    ctx: RequestContext, topic: Any, *, validate_only: bool
) -> Callable[[], Awaitable[TopicInfo]]:
    async def create() -> TopicInfo:
        return await _create(ctx, topic, validate_only=validate_only)

    return create


async def _create(ctx: RequestContext, topic: Any, *, validate_only: bool) -> TopicInfo:
    logs = ctx.services.logs
    if logs.topic(topic.name) is not None:
        raise Refused(ErrorCode.topic_already_exists, f"Topic '{topic.name}' already exists.")
    plan = _plan(ctx, topic)
    try:
        creation = logs.plan_topic(topic.name, partitions=plan.partitions, configs=plan.configs)
        if validate_only:
            return creation.info
        await ctx.services.disk.run(creation.run)
        info = logs.finish_topic(creation)
    except LogError as exc:
        if exc.code is ErrorCode.kafka_storage_error:
            log.error("CreateTopics of %r failed: %s (client %s)", topic.name, exc, ctx.client_id)
        raise Refused(exc.code, str(exc)) from exc
    if not validate_only:
        log.info(
            "created topic %s (id %s, %d partitions, configs %s) for %s",
            info.name,
            info.topic_id,
            info.partitions,
            info.configs,
            ctx.client_id,
        )
    return info


def _plan(ctx: RequestContext, topic: Any) -> _Plan:
    configs = _configs(topic)
    partitions = int(topic.num_partitions)
    replication_factor = int(topic.replication_factor)
    if topic.assignments:
        partitions = _assigned_partitions(ctx, topic)
    else:
        if partitions == _DEFAULT:
            partitions = ctx.services.config.current.get(broker_keys.NUM_PARTITIONS)
        if partitions < 1:
            raise Refused(
                ErrorCode.invalid_partitions,
                "Number of partitions was set to an invalid non-positive value.",
            )
        if replication_factor == _DEFAULT:
            replication_factor = ctx.services.config.current.get(
                broker_keys.DEFAULT_REPLICATION_FACTOR
            )
        if replication_factor < 1:
            raise Refused(
                ErrorCode.invalid_replication_factor,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if replication_factor > _REPLICATION_FACTOR:
            raise Refused(
                ErrorCode.invalid_replication_factor,
                f"Unable to replicate the partition {replication_factor} time(s): The target "
                f"replication factor of {replication_factor} cannot be reached because only "
                f"{_REPLICATION_FACTOR} broker(s) are registered.",
            )
    return _Plan(partitions=partitions, configs=configs)


def _assigned_partitions(ctx: RequestContext, topic: Any) -> int:
    if int(topic.replication_factor) != _DEFAULT:
        raise Refused(
            ErrorCode.invalid_request,
            "A manual partition assignment was specified, but replication factor was not "
            "set to -1.",
        )
    if int(topic.num_partitions) != _DEFAULT:
        raise Refused(
            ErrorCode.invalid_request,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        )
    indexes: set[int] = set()
    for assignment in topic.assignments:
        index = int(assignment.partition_index)
        if index in indexes:
            raise Refused(
                ErrorCode.invalid_replica_assignment,
                f"Found multiple manual partition assignments for partition {index}",
            )
        indexes.add(index)
        problem = replica_list_problem(
            [int(b) for b in assignment.broker_ids], node_id=ctx.services.node.node_id
        )
        if problem is not None:
            raise Refused(ErrorCode.invalid_replica_assignment, problem)
    if indexes != set(range(len(indexes))):
        raise Refused(
            ErrorCode.invalid_replica_assignment,
            "Partitions should be a consecutive 0-based integer sequence, but "
            f"{sorted(indexes)} was given.",
        )
    return len(indexes)


def _configs(topic: Any) -> dict[str, Any]:
    raw: dict[str, str | None] = {}
    for config in topic.configs:
        if config.value is None:
            raise Refused(
                ErrorCode.invalid_config,
                f"Null value not supported for topic configs: {config.name}",
            )
        raw[config.name] = config.value
    try:
        return validate_topic_configs(raw)
    except ConfigError as exc:
        raise Refused(exc.code, exc.wire_message) from exc


def _created(schema: Schema, ctx: RequestContext, info: TopicInfo, *, configs_visible: bool) -> Any:
    if not schema.has("CreatableTopicResult", "configs"):  # before v5
        return schema.make(
            "CreatableTopicResult", name=info.name, error_code=ErrorCode.none, error_message=None
        )
    if not configs_visible:
        return schema.make(
            "CreatableTopicResult",
            name=info.name,
            topic_id=info.topic_id,
            error_code=ErrorCode.none,
            error_message=None,
            topic_config_error_code=ErrorCode.topic_authorization_failed,
            num_partitions=-1,
            replication_factor=-1,
            configs=None,
        )
    configs = tuple(
        schema.make(
            "CreatableTopicConfigs",
            name=entry.name,
            value=entry.value,
            read_only=entry.read_only,
            config_source=int(entry.source),
            is_sensitive=False,
        )
        for entry in topic_entries(info.configs, ctx.services.config.dynamic)
    )
    return schema.make(
        "CreatableTopicResult",
        name=info.name,
        topic_id=info.topic_id,
        error_code=ErrorCode.none,
        error_message=None,
        topic_config_error_code=0,
        num_partitions=info.partitions,
        replication_factor=_REPLICATION_FACTOR,
        configs=configs,
    )


def _failed(schema: Schema, name: str, code: ErrorCode, message: str) -> Any:
    return schema.make(
        "CreatableTopicResult",
        name=name,
        topic_id=None,
        error_code=code,
        error_message=message,
        topic_config_error_code=0,
        num_partitions=-1,
        replication_factor=-1,
        configs=None,
    )
