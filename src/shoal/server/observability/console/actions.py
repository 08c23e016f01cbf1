"""The console's write actions, allowed only with `console.allow.writes=true`.

Each goes through the group coordinator's own administration operations, with the
checks the CLI and the admin APIs apply, so there is one way to do each thing:
- reset a share group's start offsets: refused unless the group is empty or unknown
  (`shoal share-groups --reset-offsets`), then `GroupService.alter_offsets`
  (AlterShareGroupOffsets, whose shard check refuses a non-empty group as well) over
  every partition the group has state for;
- reset a consumer group's committed offsets: refused unless Empty or Dead (Kafka's
  "Assignments can only be reset if the group is inactive"), then a simple commit
  (generation -1, no member, as OffsetCommit from `shoal consumer-groups`) of every
  committed partition;
- delete a group: `GroupService.delete_groups` (DeleteGroups: NON_EMPTY_GROUP for a
  group with members, GROUP_ID_NOT_FOUND for an unknown id).

The new offset is the log start (`earliest`) or the log end (`latest`) of each
partition. An outcome is `(http status, body)`: 200 done, 404 no such group, 409 the
coordinator refused (the body names Kafka's error), 400 a bad request.
"""

from __future__ import annotations

import logging
from typing import Any

from shoal.coordinator import RecordSinkError
from shoal.group.committed_offsets import OffsetToCommit
from shoal.protocol.errors import ErrorCode
from shoal.server.handler_services import Services
from shoal.server.observability.console.views import CONSUMER_TYPES, SHARE_TYPE

log = logging.getLogger(__name__)

Outcome = tuple[int, dict[str, Any]]
RESET_TARGETS = ("earliest", "latest")
INACTIVE_STATES = ("Empty", "Dead")
_SIMPLE_COMMIT_GENERATION = -1
_OFFSET_COMMIT_VERSION = 9
_NO_LEADER_EPOCH = -1


def _refused(error: ErrorCode, message: str | None) -> Outcome:
    return 409, {"error": error.name.upper(), "message": message or error.name.upper()}


def _group_state(services: Services, group_id: str, types: tuple[str, ...]) -> str | None:
    for group in services.group_service.list_groups(types_filter=types):
        if group.group_id == group_id:
            return group.group_state
    return None


def _offset(services: Services, topic: str, partition: int, to: str) -> int | None:
    log_ = services.logs.partition(topic, partition)
    if log_ is None:
        return None
    return log_.log_start_offset if to == "earliest" else log_.log_end_offset


def reset_share_group(services: Services, group_id: str, *, to: str) -> Outcome:
    if to not in RESET_TARGETS:
        return 400, {"error": "INVALID_REQUEST", "message": f"reset to one of {RESET_TARGETS}"}
    state = _group_state(services, group_id, (SHARE_TYPE,))
    if state is None:
        return 404, {"error": "GROUP_ID_NOT_FOUND", "message": f"No share group {group_id}."}
    if state not in INACTIVE_STATES:
        return _refused(ErrorCode.non_empty_group, f"Share group '{group_id}' is not empty.")
    described = services.group_service.describe_offsets(
        group_id=group_id, topics=None, high_watermark=lambda _tid, _p: None
    )
    topics = []
    for topic in described:
        pairs = [
            (p.partition, offset)
            for p in topic.partitions
            if (offset := _offset(services, topic.topic_name, p.partition, to)) is not None
        ]
        if pairs:
            topics.append((topic.topic_name, pairs))
    if not topics:
        return 200, {"group_id": group_id, "reset": []}
    try:
        response = services.group_service.alter_offsets(group_id=group_id, topics=topics)
    except RecordSinkError as exc:
        log.error("console: reset of share group %r not written: %s", group_id, exc)
        return _refused(ErrorCode.coordinator_not_available, str(exc))
    if response.error is not None:
        return _refused(response.error, response.error_message)
    log.info("console: share group %r start offsets reset to %s", group_id, to)
    return 200, {
        "group_id": group_id,
        "reset": [
            {"topic": t, "partition": p, "offset": o} for t, pairs in topics for p, o in pairs
        ],
    }


def reset_consumer_group(services: Services, group_id: str, *, to: str) -> Outcome:
    if to not in RESET_TARGETS:
        return 400, {"error": "INVALID_REQUEST", "message": f"reset to one of {RESET_TARGETS}"}
    state = _group_state(services, group_id, CONSUMER_TYPES)
    if state is None:
        return 404, {"error": "GROUP_ID_NOT_FOUND", "message": f"No consumer group {group_id}."}
    if state not in INACTIVE_STATES:
        return _refused(
            ErrorCode.non_empty_group,
            f"Assignments can only be reset if the group '{group_id}' is inactive, "
            f"but the current state is {state}.",
        )
    classic = services.group_service.classic
    error, fetched = classic.fetch_offsets(group_id=group_id, partitions=None)
    if error is not None:
        return _refused(error, None)
    offsets = [
        OffsetToCommit(
            topic=f.topic,
            partition=f.partition,
            offset=offset,
            leader_epoch=_NO_LEADER_EPOCH,
            metadata="",
        )
        for f in fetched
        if (offset := _offset(services, f.topic, f.partition, to)) is not None
    ]
    if not offsets:
        return 200, {"group_id": group_id, "reset": []}
    try:
        results = classic.commit_offsets(
            group_id=group_id,
            member_id="",
            generation_id=_SIMPLE_COMMIT_GENERATION,
            group_instance_id=None,
            offsets=offsets,
            api_version=_OFFSET_COMMIT_VERSION,
        )
    except RecordSinkError as exc:
        log.error("console: reset of consumer group %r not written: %s", group_id, exc)
        return _refused(ErrorCode.coordinator_not_available, str(exc))
    failed = [r for r in results if r.error is not None]
    if failed:
        first = failed[0].error
        assert first is not None
        return _refused(first, f"{len(failed)} partitions not reset")
    log.info("console: consumer group %r offsets reset to %s", group_id, to)
    return 200, {
        "group_id": group_id,
        "reset": [
            {"topic": o.topic, "partition": o.partition, "offset": o.offset} for o in offsets
        ],
    }


def delete_group(services: Services, group_id: str) -> Outcome:
    try:
        (result,) = services.group_service.delete_groups([group_id])
    except RecordSinkError as exc:
        log.error("console: deletion of group %r not written: %s", group_id, exc)
        return _refused(ErrorCode.coordinator_not_available, str(exc))
    if result.error == ErrorCode.group_id_not_found:
        return 404, {"error": "GROUP_ID_NOT_FOUND", "message": f"No group {group_id}."}
    if result.error is not None:
        return _refused(result.error, None)
    log.info("console: group %r deleted", group_id)
    return 200, {"group_id": group_id, "deleted": True}
