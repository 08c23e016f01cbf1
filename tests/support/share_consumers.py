"""confluent-kafka ShareConsumer helpers for the share-group end-to-end tests and the
share benchmark.

Facts of confluent-kafka 2.16.1's `ShareConsumer` these helpers rely on:

- `poll(timeout)` returns a `Messages` batch (a sequence; empty when nothing came),
  never a single message; each `Message` has `delivery_count()` (1 on first delivery).
- `share.acknowledgement.mode` is `implicit` (a poll's records are accepted by the
  next poll or commit) or `explicit` (`acknowledge(message, AcknowledgeType.X)` with
  ACCEPT=1, RELEASE=2, REJECT=3 for every record before the next poll, else poll
  raises IllegalStateException). Acknowledgements travel with the next poll's
  ShareFetch or with `commit_sync(timeout)` (returns {TopicPartition: None |
  KafkaException}, {} when nothing was pending) / `commit_async()` (returns None; the
  result goes to `set_acknowledgement_commit_callback(cb)`, cb(offsets:
  {TopicPartition: set[int]}, exc: KafkaException | None), run inside a later call).
- Offset reset, lock duration and delivery limit are not client settings: they are
  group configs, set here with AdminClient.incremental_alter_configs (GROUP resource).

Every loop is bounded and fails with what it saw.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin import ResourceType as AdminResourceType

from shoal.client.requests import share_group_describe
from tests.support.share_groups import described_assignment
from tests.support.wire import call1

# Broker settings for share-group end-to-end tests: locks may be as short as 1 s,
# heartbeats every 500 ms (joins and reassignments settle in well under a second)
# and a 10 s session timeout (a killed member leaves the group soon).
SHARE_TEST_BROKER_OVERRIDES: tuple[str, ...] = (
    "group.share.min.record.lock.duration.ms=1000",
    "group.share.min.heartbeat.interval.ms=100",
    "group.share.heartbeat.interval.ms=500",
    "group.share.min.session.timeout.ms=2000",
    "group.share.session.timeout.ms=10000",
)

WAIT_S = 60.0


@dataclass(frozen=True, slots=True)
class Got:
    """One delivery to a share consumer."""

    consumer: int
    topic: str
    partition: int
    offset: int
    delivery_count: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] | None

    @property
    def where(self) -> tuple[int, int]:
        return self.partition, self.offset


def got(message: Message, consumer: int = 0) -> Got:
    count = message.delivery_count()
    assert count is not None, "a ShareConsumer message without a delivery count"
    return Got(
        consumer=consumer,
        topic=str(message.topic()),
        partition=int(message.partition() or 0),
        offset=int(message.offset() or 0),
        delivery_count=count,
        key=message.key(),
        value=message.value(),
        headers=message.headers(),  # type: ignore[arg-type]
    )


def alter_group_configs(bootstrap: str, group: str, configs: Mapping[str, object]) -> None:
    """Set share-group configs (IncrementalAlterConfigs, resource type GROUP)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        AdminResourceType.GROUP,
        group,
        incremental_configs=[
            ConfigEntry(name, str(value), incremental_operation=AlterConfigOpType.SET)
            for name, value in configs.items()
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def share_group(
    bootstrap: str,
    group: str,
    *,
    reset: str = "earliest",
    lock_ms: int | None = None,
    delivery_limit: int | None = None,
) -> str:
    """Configure a share group before its first member; returns the group id."""
    configs: dict[str, object] = {"share.auto.offset.reset": reset}
    if lock_ms is not None:
        configs["share.record.lock.duration.ms"] = lock_ms
    if delivery_limit is not None:
        configs["share.delivery.count.limit"] = delivery_limit
    alter_group_configs(bootstrap, group, configs)
    return group


def share_consumer(
    bootstrap: str,
    group: str,
    topics: Sequence[str],
    *,
    explicit: bool = False,
    **config: Any,
) -> ShareConsumer:
    """A subscribed ShareConsumer; `config` uses underscores for dots
    (max_poll_records=10 -> max.poll.records; log_level keeps its name)."""
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "share.acknowledgement.mode": "explicit" if explicit else "implicit",
        "reconnect.backoff.ms": 20,
        "reconnect.backoff.max.ms": 500,
    }
    settings.update({k if k == "log_level" else k.replace("_", "."): v for k, v in config.items()})
    consumer = ShareConsumer(settings)
    consumer.subscribe(list(topics))
    return consumer


def records_of(batch: Iterable[Message]) -> list[Message]:
    """The records of a poll; an error message fails the test."""
    out = []
    for message in batch:
        error = message.error()
        if error is not None:
            raise KafkaException(error)
        out.append(message)
    return out


def poll_until(
    consumers: Sequence[ShareConsumer],
    done: Callable[[], bool],
    *,
    on_message: Callable[[int, Message], None] | None = None,
    timeout_s: float = WAIT_S,
    poll_s: float = 0.1,
    what: str = "the condition",
) -> None:
    """Poll the consumers round-robin (serving their callbacks), passing each record
    to `on_message(consumer index, message)`, until `done()` holds."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        for index, consumer in enumerate(consumers):
            for message in records_of(consumer.poll(poll_s)):
                if on_message is not None:
                    on_message(index, message)
            if done():
                return


def first_batch(consumer: ShareConsumer, *, timeout_s: float = WAIT_S) -> list[Message]:
    """The records of the first non-empty poll."""
    deadline = time.monotonic() + timeout_s
    while True:
        batch = records_of(consumer.poll(0.2))
        if batch:
            return batch
        if time.monotonic() > deadline:
            raise AssertionError(f"no records within {timeout_s} s")


def describe(bootstrap: str, group: str) -> Any:
    (described,) = call1(bootstrap, share_group_describe([group])).groups
    return described


def wait_for_members(
    bootstrap: str,
    group: str,
    consumers: Sequence[ShareConsumer],
    topic: str,
    *,
    partitions: int,
    members: int | None = None,
    on_message: Callable[[int, Message], None] | None = None,
    timeout_s: float = WAIT_S,
) -> None:
    """Poll `consumers` until the group is Stable with `members` members (default:
    one per consumer), every member at the assignment epoch and every partition of
    `topic` assigned to someone."""
    want = len(consumers) if members is None else members

    def settled() -> bool:
        described = describe(bootstrap, group)
        if described.group_state != "Stable" or len(described.members) != want:
            return False
        assigned: set[int] = set()
        for member in described.members:
            if member.member_epoch != described.assignment_epoch:
                return False
            assigned.update(described_assignment(member).get(topic, ()))
        return described.group_epoch == described.assignment_epoch and assigned == set(
            range(partitions)
        )

    poll_until(
        consumers,
        settled,
        on_message=on_message,
        timeout_s=timeout_s,
        what=f"{want} members of {group} assigned all of {topic}",
    )


def producer(bootstrap: str, **config: Any) -> Producer:
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "linger.ms": 5,
        "enable.idempotence": True,
        "message.timeout.ms": 60_000,
    }
    settings.update({k if k == "log_level" else k.replace("_", "."): v for k, v in config.items()})
    return Producer(settings)


def produce_values(
    bootstrap: str,
    topic: str,
    values: Iterable[bytes],
    *,
    partition: int | None = None,
    flush_every: int | None = None,
    **config: Any,
) -> int:
    """Produce values (in one flush, so usually one batch, unless `flush_every`
    cuts them into smaller batches); returns how many."""
    p = producer(bootstrap, **config)
    count = 0
    for value in values:
        if partition is None:
            p.produce(topic, value=value)
        else:
            p.produce(topic, value=value, partition=partition)
        count += 1
        if flush_every and count % flush_every == 0:
            assert p.flush(30) == 0
    assert p.flush(60) == 0, "records still undelivered"
    return count


def error_code(exc: KafkaException | BaseException | None) -> int | None:
    if exc is None:
        return None
    assert isinstance(exc, KafkaException), exc
    error = exc.args[0]
    assert isinstance(error, KafkaError), exc
    return int(error.code())


class AckLog:
    """Records what a share consumer's acknowledgement-commit callback reports."""

    def __init__(self) -> None:
        self.results: list[tuple[dict[tuple[str, int], set[int]], KafkaException | None]] = []

    def __call__(self, offsets: Mapping[Any, set[int]], exc: KafkaException | None) -> None:
        self.results.append(
            ({(tp.topic, tp.partition): set(acked) for tp, acked in offsets.items()}, exc)
        )

    def confirmed(self, topic: str, partition: int) -> set[int]:
        """Offsets of (topic, partition) whose acknowledgement succeeded."""
        out: set[int] = set()
        for offsets, exc in self.results:
            if exc is None:
                out |= offsets.get((topic, partition), set())
        return out

    @property
    def errors(self) -> list[KafkaException]:
        return [exc for _, exc in self.results if exc is not None]


def close_all(consumers: Iterable[ShareConsumer]) -> None:
    """Close every consumer, even if one close fails; re-raise the first failure."""
    failure: BaseException | None = None
    for consumer in consumers:
        try:
            consumer.close()
        except Exception as exc:  # noqa: BLE001 - close the rest first
            if failure is None:
                failure = exc
    if failure is not None:
        raise failure
