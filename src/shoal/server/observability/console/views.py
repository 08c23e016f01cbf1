"""What the console's pages show, as JSON-ready data read from the broker's services.

Read-only: every function here only reads. Sources, one each:
- topics: `services.logs` (partitions, log start/end, size) and the effective topic
  configs (`config.effective_topic_config`, retention);
- share groups: the group coordinator's ListGroups / ShareGroupDescribe /
  DescribeShareGroupOffsets answers (`GroupService.list_groups`, `describe`,
  `describe_offsets`: state, members, assignments, the persisted SPSO and lag) and, for
  share-partitions loaded in this broker, `SharePartition.snapshot` (the in-flight
  window: the live SPSO and SPEO, each entry's state, delivery count, holder and lock
  expiry, capped at `console.inflight.max.records` entries) and
  `SharePartition.delivery_holds` (what key-ordered and scheduled delivery, Shoal's
  extensions, hold back: blocked keys and the records they hold, the keys holding
  the most, records waiting for their `shoal.deliver.at` time and the next due); the
  group's delivery extensions are its effective settings (`ShareService.settings_for`);
  the lag of a loaded share-partition is Kafka's formula on the live window;
- consumer groups: ListGroups and the committed offsets (`ClassicService.fetch_offsets`)
  against each partition's log end.

Lock deadlines are on the monotonic clock; a view gives the time left
(`lock_expires_in_ms`) and the wall-clock expiry (`lock_expires_at_ms`). Scheduled
delivery's due times are epoch milliseconds already (`deliver_at_ms`, `next_due_ms`);
a view adds the time left on the broker's wall clock (`next_due_in_ms`).
"""

from __future__ import annotations

import uuid
from typing import Any

from shoal import limits
from shoal.config import broker_keys, effective_topic_config, topic_keys, topic_value
from shoal.group.results import DescribedGroup, DescribedOffsetsTopic
from shoal.server.handler_services import Services
from shoal.server.services.group_service import share_groups_enabled
from shoal.share.holding import DeliveryHolds
from shoal.share.partition import InFlightSnapshot
from shoal.share.persister import SharePartitionKey

Json = dict[str, Any]

SHARE_TYPE = "share"
CONSUMER_TYPES = ("consumer", "classic")


def topics(services: Services) -> Json:
    """Every topic with its partitions' log start, log end and size, and retention."""
    broker_config = services.config.current
    rows = []
    for info in sorted(services.logs.topics(), key=lambda t: t.name):
        configs = effective_topic_config(broker_config, info.configs)
        partitions = []
        for index in range(info.partitions):
            log = services.logs.partition(info.name, index)
            if log is None:
                continue
            partitions.append(
                {
                    "partition": index,
                    "log_start_offset": log.log_start_offset,
                    "log_end_offset": log.log_end_offset,
                    "size_bytes": log.size_bytes,
                }
            )
        rows.append(
            {
                "name": info.name,
                "topic_id": str(info.topic_id),
                "internal": info.internal,
                "partitions": partitions,
                "records": sum(p["log_end_offset"] - p["log_start_offset"] for p in partitions),
                "size_bytes": sum(p["size_bytes"] for p in partitions),
                "retention_ms": topic_value(configs, topic_keys.RETENTION_MS),
                "retention_bytes": topic_value(configs, topic_keys.RETENTION_BYTES),
            }
        )
    return {"topics": rows}


def share_groups(services: Services) -> Json:
    """Every share group with its state and member count."""
    listed = services.group_service.list_groups(types_filter=[SHARE_TYPE])
    described = {
        group.group_id: group
        for group in services.group_service.describe([g.group_id for g in listed])
    }
    return {
        "enabled": share_groups_enabled(services.config.current),
        "groups": [
            {
                "group_id": g.group_id,
                "state": g.group_state,
                "members": len(described[g.group_id].members) if g.group_id in described else 0,
            }
            for g in listed
        ],
    }


def share_group(services: Services, group_id: str) -> Json | None:
    """One share group: state, members and their assignments, its delivery extensions,
    and per share-partition SPSO, SPEO, lag, the in-flight window and what the
    extensions hold back. None if there is no such share group."""
    (described,) = services.group_service.describe([group_id])
    if described.error is not None:
        return None
    offsets = services.group_service.describe_offsets(
        group_id=group_id, topics=None, high_watermark=lambda tid, p: _log_end(services, tid, p)
    )
    return {
        "group_id": group_id,
        "state": described.group_state,
        "group_epoch": described.group_epoch,
        "assignment_epoch": described.assignment_epoch,
        "members": _members(described),
        "delivery": _delivery(services, group_id),
        "partitions": _share_partitions(
            services,
            group_id,
            offsets,
            max_entries=services.config.current.get(broker_keys.CONSOLE_INFLIGHT_MAX_RECORDS),
        ),
        "allow_writes": services.config.current.get(broker_keys.CONSOLE_ALLOW_WRITES),
    }


def _delivery(services: Services, group_id: str) -> Json:
    """The group's delivery extensions (Shoal's), from its effective settings."""
    settings = services.share_service.settings_for(group_id)
    return {
        "paused": settings.delivery_paused,
        "key_order": settings.key_ordered,
        "delay_max_ms": settings.delivery_delay_max_ms,
    }


def _members(described: DescribedGroup) -> list[Json]:
    return [
        {
            "member_id": m.member_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "member_epoch": m.member_epoch,
            "subscribed": list(m.subscribed_topic_names),
            "assignment": [
                {"topic": a.topic_name, "partitions": list(a.partitions)} for a in m.assignment
            ],
        }
        for m in described.members
    ]


def _share_partitions(
    services: Services,
    group_id: str,
    offsets: list[DescribedOffsetsTopic],
    *,
    max_entries: int,
    holds: bool = True,
) -> list[Json]:
    """A row per share-partition with state; with `holds` (not for the lag alone) what
    the delivery extensions hold back in each loaded one."""
    rows = []
    for topic in offsets:
        for p in topic.partitions:
            row: Json = {
                "topic": topic.topic_name,
                "partition": p.partition,
                "start_offset": p.start_offset,
                "lag": p.lag,
                "log_end_offset": None
                if topic.topic_id is None
                else _log_end(services, topic.topic_id, p.partition),
                "loaded": False,
            }
            if topic.topic_id is not None:
                key = SharePartitionKey(group_id, topic.topic_id, p.partition)
                sp = services.share_service.partitions.get(key)
                if sp is not None and sp.initialized:
                    row |= _window(services, sp.snapshot(max_entries=max_entries))
                    if holds:
                        row["holds"] = _holds(
                            services, sp.delivery_holds(top=limits.SHARE_BLOCKED_KEYS_SHOWN)
                        )
                    row["persisted_start_offset"] = p.start_offset
                    row["lag"] = _live_lag(row)
            rows.append(row)
    return rows


def _live_lag(row: Json) -> int:
    """DescribeShareGroupOffsets' lag (log end - SPSO - delivery-complete count,
    docs/design/coordinators.md §3) from the live window instead of the persisted summary."""
    end = row["log_end_offset"]
    if end is None:
        return -1
    return int(end - row["start_offset"] - row["delivery_complete_count"])


def _window(services: Services, snap: InFlightSnapshot) -> Json:
    """A loaded share-partition's live window (its SPSO is the live one)."""
    wall_now_ms = services.clock.wall_ms()
    entries = []
    for e in snap.entries:
        left_ms = None if e.lock_deadline_ms is None else e.lock_deadline_ms - snap.taken_at_ms
        entries.append(
            {
                "first_offset": e.first_offset,
                "last_offset": e.last_offset,
                "state": e.state.name.lower(),
                "delivery_count": e.delivery_count,
                "holder": e.member_id or None,
                "pending_write": e.pending,
                "lock_expires_in_ms": left_ms,
                "lock_expires_at_ms": None if left_ms is None else wall_now_ms + left_ms,
                "deliver_at_ms": e.deliver_at_ms,
                "key_blocked": e.key_blocked,
            }
        )
    return {
        "loaded": True,
        "start_offset": snap.start_offset,
        "end_offset": snap.end_offset,
        "delivery_complete_count": snap.delivery_complete_count,
        "inflight": entries,
        "inflight_truncated": snap.truncated,
    }


def _holds(services: Services, holds: DeliveryHolds) -> Json:
    """What key order and scheduled delivery hold back in a loaded share-partition.
    A key is shown as text (undecodable bytes replaced) and as hex."""
    due = holds.next_due_ms
    return {
        "blocked_keys": holds.blocked_keys,
        "blocked_records": holds.blocked_records,
        "top_blocked_keys": [
            {"key": key.decode("utf-8", "replace"), "key_hex": key.hex(), "held_records": held}
            for key, held in holds.top_blocked_keys
        ],
        "scheduled_records": holds.scheduled_records,
        "next_due_ms": due,
        "next_due_in_ms": None if due is None else max(0, due - services.clock.wall_ms()),
        "malformed_deliver_at": holds.malformed_deliver_at,
    }


def consumer_groups(services: Services) -> Json:
    """Every consumer (and classic) group with its state and total lag."""
    listed = services.group_service.list_groups(types_filter=CONSUMER_TYPES)
    rows = []
    for g in listed:
        partitions = _committed(services, g.group_id)
        known = [p["lag"] for p in partitions if p["lag"] is not None]
        rows.append(
            {
                "group_id": g.group_id,
                "type": g.group_type,
                "state": g.group_state,
                "partitions": len(partitions),
                "lag": sum(known) if known else None,
            }
        )
    return {"groups": rows}


def consumer_group(services: Services, group_id: str) -> Json | None:
    """One consumer group: state, type and lag per partition (committed offset vs log
    end). None if no consumer or classic group has that id."""
    listed = {
        g.group_id: g for g in services.group_service.list_groups(types_filter=CONSUMER_TYPES)
    }
    group = listed.get(group_id)
    if group is None:
        return None
    return {
        "group_id": group_id,
        "type": group.group_type,
        "state": group.group_state,
        "partitions": _committed(services, group_id),
        "allow_writes": services.config.current.get(broker_keys.CONSOLE_ALLOW_WRITES),
    }


def _committed(services: Services, group_id: str) -> list[Json]:
    error, fetched = services.group_service.classic.fetch_offsets(
        group_id=group_id, partitions=None
    )
    if error is not None:
        return []
    rows = []
    for f in sorted(fetched, key=lambda f: (f.topic, f.partition)):
        log = services.logs.partition(f.topic, f.partition)
        end = None if log is None else log.log_end_offset
        rows.append(
            {
                "topic": f.topic,
                "partition": f.partition,
                "committed_offset": f.offset,
                "log_end_offset": end,
                "lag": None if end is None or f.offset < 0 else max(0, end - f.offset),
            }
        )
    return rows


def lag_groups(services: Services) -> tuple[list[str], list[str]]:
    """(share group ids, consumer and classic group ids), for `group_lag`."""
    share = services.group_service.list_groups(types_filter=[SHARE_TYPE])
    consumer = services.group_service.list_groups(types_filter=CONSUMER_TYPES)
    return [g.group_id for g in share], [g.group_id for g in consumer]


def share_group_lag(services: Services, group_id: str) -> int:
    """The group's lag summed over its share-partitions (live where loaded)."""
    offsets = services.group_service.describe_offsets(
        group_id=group_id,
        topics=None,
        high_watermark=lambda tid, p: _log_end(services, tid, p),
    )
    rows = _share_partitions(services, group_id, offsets, max_entries=0, holds=False)
    return sum(max(0, row["lag"]) for row in rows)


def consumer_group_lag(services: Services, group_id: str) -> int:
    """The group's lag summed over its committed partitions."""
    return sum(p["lag"] or 0 for p in _committed(services, group_id))


def _log_end(services: Services, topic_id: uuid.UUID, partition: int) -> int | None:
    info = services.logs.topic_by_id(topic_id)
    log = None if info is None else services.logs.partition(info.name, partition)
    return None if log is None else log.log_end_offset
