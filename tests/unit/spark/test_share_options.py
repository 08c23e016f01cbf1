"""Options of the shoal-share source (share_options.py): every mistake names the option."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoal.spark.options import OptionError
from shoal.spark.share_options import (
    ACQUIRE_WAIT_MS_MAX,
    RECORDS_PER_BATCH_MAX,
    TASKS_PER_BATCH_MAX,
    parse_share_options,
)

BASE = {"bootstrap.servers": "localhost:9092", "topic": "orders", "group.id": "g"}


def test_defaults_and_lower_cased_names_as_spark_passes_them() -> None:
    options = parse_share_options(
        {
            **BASE,
            "maxrecordsperbatch": "500",
            "numpartitions": "8",
            "share.auto.offset.reset": "earliest",
            "share.record.lock.duration.ms": "60000",
        }
    )
    assert options.topics == ("orders",)
    assert options.records_per_batch == 500
    assert options.tasks_per_batch == 8
    assert options.group_configs == {
        "share.auto.offset.reset": "earliest",
        "share.record.lock.duration.ms": "60000",
    }
    assert not options.read_committed
    assert options.checkpoint is None
    assert parse_share_options(BASE).tasks_per_batch is None


def test_checkpoint_location_is_the_local_directory() -> None:
    options = parse_share_options({**BASE, "checkpointlocation": "file:///tmp/q/cp"})
    assert options.checkpoint == Path("/tmp/q/cp")


def test_topics_takes_a_list() -> None:
    options = parse_share_options(
        {k: v for k, v in BASE.items() if k != "topic"} | {"topics": "a, b,a"}
    )
    assert options.topics == ("a", "b")


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"bootstrap.servers": "h:1", "topic": "t"}, "'group.id' is required"),
        ({"bootstrap.servers": "h:1", "group.id": "g"}, "'topic' is required"),
        ({"topic": "t", "group.id": "g"}, "'bootstrap.servers' is required"),
        ({**BASE, "group.id": " "}, "'group.id'"),
        ({**BASE, "topics": "x"}, "'topic' and 'topics'"),
        ({**BASE, "maxRecordsPerBatch": "0"}, "'maxRecordsPerBatch'"),
        ({**BASE, "maxRecordsPerBatch": str(RECORDS_PER_BATCH_MAX + 1)}, "'maxRecordsPerBatch'"),
        ({**BASE, "numPartitions": "many"}, "'numPartitions'"),
        ({**BASE, "numPartitions": str(TASKS_PER_BATCH_MAX + 1)}, "'numPartitions'"),
        ({**BASE, "acquireMaxWaitMs": str(ACQUIRE_WAIT_MS_MAX + 1)}, "'acquireMaxWaitMs'"),
        ({**BASE, "lockRenewIntervalMs": "10"}, "'lockRenewIntervalMs'"),
        ({**BASE, "checkpointLocation": "hdfs://nn/cp"}, "'checkpointLocation'"),
        ({**BASE, "maxRecordsPerBatchh": "1"}, "unknown option 'maxRecordsPerBatchh'"),
        ({**BASE, "share.no.such.config": "1"}, "unknown option 'share.no.such.config'"),
        ({**BASE, "share.auto.offset.reset": ""}, "'share.auto.offset.reset'"),
    ],
)
def test_mistakes_name_the_option(options: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError, match=named):
        parse_share_options({k: v for k, v in options.items() if v is not None})
