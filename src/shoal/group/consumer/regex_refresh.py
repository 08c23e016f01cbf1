"""Resolving consumer groups' regex subscriptions, asynchronously as Kafka 4.2 does.

A member's `SubscribedTopicRegex` is not resolved in the heartbeat that brings it.
As Kafka's `GroupMetadataManager.maybeUpdateRegularExpressions`, a heartbeat only
decides whether the group's regexes need resolving (`refresh_needed`); the shard then
schedules a refresh (soft state, like Kafka's executor task keyed by group), which runs
as its own write once the heartbeat's answer is out (`GroupCoordinatorShard.
refresh_regexes`, fired by the timer driver). The refresh (`refresh_records`, Kafka's
`handleRegularExpressionsResult`) writes each regex's matching topics (record 16) and,
if any regex's topics changed, bumps the group epoch, so the members get the new
partitions at their next heartbeat. The observable sequence: the heartbeat with a
new regex is answered without its topics; a later heartbeat gets them.

A refresh is needed (Kafka's conditions, in order) when the group subscribes to at
least one regex, none is in flight, and either the member brought a regex no other
member has, or more than `REGEX_REFRESH_MIN_INTERVAL_MS` passed since the last one
and: a subscribed regex is unresolved, topics were created since the last one
(`topics_version`), or `group.consumer.regex.refresh.interval.ms` passed.

What a regex matches: every existing topic whose whole name it matches, internal
topics excluded (`consumer_membership.matching_topics`). Kafka also drops topics the
member's principal may not DESCRIBE; Shoal does not filter by ACLs here.

Pure: the shard keeps the soft state (`RegexRefreshState`) and passes the clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from shoal.group import records as r
from shoal.group.consumer.group import ConsumerGroup, ConsumerGroupMember
from shoal.group.consumer.membership import (
    all_subscribed_names,
    epoch_record,
    matching_topics,
)
from shoal.group.topic_image import TopicImage, metadata_hash

REGEX_REFRESH_MIN_INTERVAL_MS = 10_000
"""Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: at most one refresh per group per
10 s, unless a member brings a regex the group does not have."""
REGEX_REFRESH_INTERVAL_MS_DEFAULT = 600_000
"""`group.consumer.regex.refresh.interval.ms`'s default: a refresh at least this
often while the group subscribes to regexes."""


@dataclass(slots=True)
class RegexRefreshState:
    """Soft per-group state (never persisted, as Kafka's executor and its
    in-memory refresh time; after a reload a group may refresh at once)."""

    last_refresh_ms: int | None = None
    """Monotonic time of the last refresh; None: none since this shard started."""
    topics_version: int = -1
    """The shard's topics version the last refresh saw."""
    scheduled: bool = False
    due_ms: int = 0
    """When a scheduled refresh runs (the heartbeat's time: as soon as its answer is
    out)."""


def subscribed_regexes(
    group: ConsumerGroup, old: ConsumerGroupMember | None, new: ConsumerGroupMember | None
) -> set[str]:
    """The group's regexes once `old` is replaced by `new` (either may be None)."""
    regexes = {
        m.subscribed_topic_regex
        for mid, m in group.members.items()
        if m.subscribed_topic_regex and (old is None or mid != old.member_id)
    }
    if new is not None and new.subscribed_topic_regex:
        regexes.add(new.subscribed_topic_regex)
    return regexes


def refresh_needed(
    group: ConsumerGroup,
    old: ConsumerGroupMember | None,
    new: ConsumerGroupMember,
    *,
    state: RegexRefreshState,
    now_ms: int,
    topics_version: int,
    refresh_interval_ms: int,
) -> bool:
    """Kafka's conditions for scheduling a refresh after `old` became `new`."""
    old_regex = old.subscribed_topic_regex if old is not None else None
    new_regex = new.subscribed_topic_regex
    brought_new = bool(
        new_regex
        and new_regex != old_regex
        and not any(
            m.subscribed_topic_regex == new_regex
            for mid, m in group.members.items()
            if mid != new.member_id
        )
    )
    regexes = subscribed_regexes(group, old, new)
    if not regexes or state.scheduled:
        return False
    last = state.last_refresh_ms
    if not brought_new and last is not None and now_ms <= last + REGEX_REFRESH_MIN_INTERVAL_MS:
        return False
    return (
        brought_new
        or any(regex not in group.resolved_regexes for regex in regexes)
        or state.topics_version < topics_version
        or last is None
        or now_ms > last + refresh_interval_ms
    )


def refresh_records(
    group: ConsumerGroup, *, image: TopicImage, topics_version: int, wall_ms: int
) -> list[r.CoordinatorRecord]:
    """The group's regexes resolved against `image`: one record 16 per regex its
    members subscribe to, then a group epoch bump (with the new metadata hash) if
    any regex now matches other topics than before."""
    gid = group.group_id
    records: list[r.CoordinatorRecord] = []
    resolved = dict(group.resolved_regexes)
    changed = False
    for regex in sorted(group.subscribed_regexes()):
        topics = matching_topics(regex, image)
        if resolved.get(regex) != topics:
            changed = True
        resolved[regex] = topics
        records.append(
            r.CoordinatorRecord(
                key=r.ConsumerGroupRegularExpressionKey(group_id=gid, regular_expression=regex),
                value=r.ConsumerGroupRegularExpressionValue(
                    topics=tuple(sorted(topics)), version=topics_version, timestamp=wall_ms
                ),
            )
        )
    if changed:
        names = all_subscribed_names(group.members.values(), resolved)
        new_hash = metadata_hash(subscribed_topic_names=names, image=image)
        records.append(epoch_record(gid, group.group_epoch + 1, new_hash))
    return records


def new_topic_names(before: TopicImage, after: Iterable[str]) -> bool:
    """Whether `after` names a topic `before` does not have (Kafka's "metadata image
    with new topics")."""
    return any(before.by_name(name) is None for name in after)
