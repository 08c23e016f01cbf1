"""Options of the `shoal-share` streaming source, parsed and checked (pure; no pyspark).

| option | default | meaning |
|---|---|---|
| `bootstrap.servers` (or `kafka.bootstrap.servers`) | required | brokers |
| `topic` (or `topics`) | required | a topic, or a comma-separated list |
| `group.id` | required | the share group |
| `maxRecordsPerBatch` | 10000 | records acquired per micro-batch (Spark's `ReadMaxRows`) |
| `numPartitions` | topic-partitions in the batch | Spark tasks per micro-batch (best: the cores) |
| `acquireMaxWaitMs` | 500 | how long one acquisition waits for records |
| `lockRenewIntervalMs` | half the lock | how often held records are RENEWed |
| `checkpointLocation` | none | the query's checkpoint directory (see below) |
| `share.*` group configs | broker's | SET on the group before joining (docs/reference/configs.md) |

`checkpointLocation` is the same local directory as the query's own: reading which
batches Spark committed there lets the source ACCEPT, when the query stops, a batch
committed after the last trigger; keeping its member id there lets a restarted query
rejoin as the member it was; keeping what a split replay read there lets it split a
failing batch (share_checkpoint.py, share_bisect.py).

The `share.*` keys are the group configs Shoal knows (`shoal.config.GROUP_KEYS`); their
values are checked by the broker, whose refusal names the key. Spark lower-cases
option names; matching is case-insensitive. Every problem raises `OptionError` naming
the option.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from shoal.client.security import ClientSecurity
from shoal.config import GROUP_KEYS, broker_keys, group_keys
from shoal.spark.options import (
    BOOTSTRAP_SERVERS,
    REQUIRED,
    OptionError,
    OptionSpec,
    int_parser,
    parse_group_id,
    parse_options,
    parse_topic_list,
)
from shoal.spark.share_checkpoint import local_checkpoint

SOURCE_NAME: Final = "shoal-share"
RECORDS_PER_BATCH_DEFAULT: Final = 10_000
RECORDS_PER_BATCH_MAX: Final = 1_000_000
"""Ceiling of `maxRecordsPerBatch`, and what a batch acquires at most when Spark asks
for everything available (`ReadAllAvailable`): the records of a batch are named in its
offset JSON and held locked until the batch commits."""
TASKS_PER_BATCH_MAX: Final = 10_000
"""Ceiling of `numPartitions`."""
ACQUIRE_WAIT_MS_DEFAULT: Final = 500
ACQUIRE_WAIT_MS_MAX: Final = 60_000
"""Ceiling of `acquireMaxWaitMs` (the broker clamps a ShareFetch's wait to this too)."""
LOCK_RENEW_INTERVAL_MS_MIN: Final = 100
_LOCK_DURATION_MAX = broker_keys.GROUP_SHARE_MAX_RECORD_LOCK_DURATION_MS.definition.max
assert isinstance(_LOCK_DURATION_MAX, int)
LOCK_RENEW_INTERVAL_MS_MAX: Final = _LOCK_DURATION_MAX // 2
"""`lockRenewIntervalMs` bounds: half of the largest lock duration Kafka allows."""


TOPICS: Final = OptionSpec(
    "topic",
    parse_topic_list,
    REQUIRED,
    aliases=("topics",),
    help="a topic name or a comma-separated list",
)
GROUP_ID: Final = OptionSpec("group.id", parse_group_id, REQUIRED, help="the share group's id")
RECORDS_PER_BATCH: Final = OptionSpec(
    "maxRecordsPerBatch",
    int_parser(1, RECORDS_PER_BATCH_MAX),
    RECORDS_PER_BATCH_DEFAULT,
    help="records per micro-batch",
)
TASKS_PER_BATCH: Final = OptionSpec[int | None](
    "numPartitions",
    int_parser(1, TASKS_PER_BATCH_MAX),
    None,
    help="Spark tasks per micro-batch",
)
ACQUIRE_WAIT_MS: Final = OptionSpec(
    "acquireMaxWaitMs",
    int_parser(0, ACQUIRE_WAIT_MS_MAX),
    ACQUIRE_WAIT_MS_DEFAULT,
    help="milliseconds",
)
LOCK_RENEW_INTERVAL_MS: Final = OptionSpec[int | None](
    "lockRenewIntervalMs",
    int_parser(LOCK_RENEW_INTERVAL_MS_MIN, LOCK_RENEW_INTERVAL_MS_MAX),
    None,
    help="milliseconds",
)
CHECKPOINT: Final = OptionSpec[Path | None](
    "checkpointLocation",
    local_checkpoint,
    None,
    help="the query's checkpoint directory, a local path or file: URI",
)

SPECS: Final = (
    BOOTSTRAP_SERVERS,
    TOPICS,
    GROUP_ID,
    RECORDS_PER_BATCH,
    TASKS_PER_BATCH,
    ACQUIRE_WAIT_MS,
    LOCK_RENEW_INTERVAL_MS,
    CHECKPOINT,
)


@dataclass(frozen=True, slots=True)
class ShareOptions:
    bootstrap: str
    topics: tuple[str, ...]
    group_id: str
    records_per_batch: int = RECORDS_PER_BATCH_DEFAULT
    tasks_per_batch: int | None = None
    acquire_wait_ms: int = ACQUIRE_WAIT_MS_DEFAULT
    lock_renew_interval_ms: int | None = None
    checkpoint: Path | None = None
    group_configs: Mapping[str, str] = field(default_factory=dict)
    security: ClientSecurity = field(default_factory=ClientSecurity)
    """From the `kafka.`-prefixed security options (spark/options.py)."""

    @property
    def read_committed(self) -> bool:
        level = self.group_configs.get(group_keys.SHARE_ISOLATION_LEVEL.name, "")
        return level.lower() == "read_committed"


def parse_share_options(raw: Mapping[str, str]) -> ShareOptions:
    """The source's options; OptionError naming the option when one is wrong."""
    group_keys = {key.lower(): key for key in GROUP_KEYS}
    group_configs: dict[str, str] = {}
    rest: dict[str, str] = {}
    for key, value in raw.items():
        canonical = group_keys.get(key.lower())
        if canonical is None:
            rest[key] = value
        elif not str(value).strip():
            raise OptionError(f"option '{canonical}' must not be empty")
        else:
            group_configs[canonical] = str(value).strip()
    parsed = parse_options(rest, SPECS, source=SOURCE_NAME)
    return ShareOptions(
        bootstrap=parsed.value(BOOTSTRAP_SERVERS),
        topics=parsed.value(TOPICS),
        group_id=parsed.value(GROUP_ID),
        records_per_batch=parsed.value(RECORDS_PER_BATCH),
        tasks_per_batch=parsed.value(TASKS_PER_BATCH),
        acquire_wait_ms=parsed.value(ACQUIRE_WAIT_MS),
        lock_renew_interval_ms=parsed.value(LOCK_RENEW_INTERVAL_MS),
        checkpoint=parsed.value(CHECKPOINT),
        group_configs=group_configs,
        security=parsed.security,
    )
