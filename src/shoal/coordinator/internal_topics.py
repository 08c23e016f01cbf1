"""The internal topics coordinators keep their records on (`__consumer_offsets`,
`__share_group_state`): created on first use, opened afterwards.

An internal topic is flagged internal in the topic metadata (Metadata shows
IsInternal; clients may not produce to it, delete it or delete its records) and is
never refused by the broker's topic and partition limits. Its settings are fixed
here, as Kafka fixes them when it creates one: cleanup `delete` with infinite time
and size retention (coordinators prune their own logs rather than rely on the
cleaner: docs/design/compaction.md, "Internal topics"), `compression.type=producer` whatever
the broker's default (batches are stored as the coordinator writes them,
uncompressed), and the segment size the caller passes from its config.

An existing topic is used as it is: its partition count wins over the configured one
(Kafka too reads the count from metadata; changing it after deployment would move
keys), and a same-named topic not flagged internal is used with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog

logger = logging.getLogger(__name__)

INTERNAL_TOPIC_CONFIGS: Mapping[str, str] = {
    "cleanup.policy": "delete",
    "retention.ms": "-1",
    "retention.bytes": "-1",
    "compression.type": "producer",
}
"""Topic configs every internal topic gets; the caller's `configs` add to them."""


def ensure_internal_topic(
    logs: LogManager, *, name: str, partitions: int, configs: Mapping[str, Any]
) -> list[PartitionLog]:
    """The partition logs of internal topic `name`, creating it with `partitions`
    partitions and `INTERNAL_TOPIC_CONFIGS` plus `configs` if absent. Raises the
    `LogError` of a failed creation."""
    info = logs.topic(name)
    if info is None:
        info = logs.create_topic(
            name,
            partitions=partitions,
            configs={**INTERNAL_TOPIC_CONFIGS, **configs},
            internal=True,
        )
        logger.info(
            "created internal topic %s (id %s, %d partitions, configs %s)",
            name,
            info.topic_id,
            info.partitions,
            info.configs,
        )
    else:
        if not info.internal:
            logger.warning(
                "topic %s exists but is not flagged internal (created by a client?); using "
                "it with its own configs %s",
                name,
                info.configs,
            )
        if info.partitions != partitions:
            logger.warning(
                "internal topic %s has %d partitions, not the configured %d; keeping %d",
                name,
                info.partitions,
                partitions,
                info.partitions,
            )
    result = []
    for index in range(info.partitions):
        log = logs.partition(name, index)
        assert log is not None, f"{name}-{index} is not open"
        result.append(log)
    return result
