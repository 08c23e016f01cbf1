"""Options of format("shoal"): parsing (pure Python) and how Spark reports mistakes.

A mistake must be reported with the option's name before any task runs: every Spark
case here sets a job group and checks that Spark started no job in it.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from shoal.client.security import ClientSecurity
from shoal.spark.cluster import PROBE_TIMEOUT_MS, client_for, close_cached_clients
from shoal.spark.options import (
    BOOTSTRAP_SERVERS,
    REQUIRED,
    OptionError,
    OptionSpec,
    int_parser,
    parse_offsets,
    parse_options,
    parse_topic_list,
    require_reachable,
)
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic, flush_all, producer
from tests.support.topics import topic_name

SPECS = (
    BOOTSTRAP_SERVERS,
    OptionSpec("topic", parse_topic_list, REQUIRED, aliases=("topics",)),
    OptionSpec("startingOffsets", parse_offsets, "earliest"),
    OptionSpec("minPartitions", int_parser(1, 100), None, help="a positive integer"),
)


def parse(**options: str) -> dict[str, Any]:
    # Spark hands sources a case-insensitive map whose keys are lower-cased.
    raw = {key.replace("_", ".").lower(): value for key, value in options.items()}
    return parse_options(raw, SPECS, source="shoal")


# ---- parsing, no Spark


def test_options_parse_to_canonical_names_with_defaults() -> None:
    parsed = parse(bootstrap_servers="h1:1, h2:2", topics="a, b,a")
    assert parsed == {
        "bootstrap.servers": "h1:1,h2:2",
        "topic": ("a", "b"),
        "startingOffsets": "earliest",
        "minPartitions": None,
        "security": ClientSecurity(),  # PLAINTEXT: no kafka.-prefixed security option
    }


def test_kafka_prefixed_bootstrap_is_an_alias() -> None:
    parsed = parse_options({"kafka.bootstrap.servers": "h:9", "topic": "t"}, SPECS, source="shoal")
    assert parsed["bootstrap.servers"] == "h:9"


def test_unknown_option_is_named_with_the_closest_known_one() -> None:
    with pytest.raises(OptionError) as info:
        parse(bootstrap_servers="h:1", topic="t", startingoffset="earliest")
    message = str(info.value)
    assert "unknown option 'startingoffset'" in message
    assert "did you mean 'startingOffsets'" in message


def test_missing_required_option_is_named() -> None:
    with pytest.raises(OptionError, match="option 'topic' is required"):
        parse(bootstrap_servers="h:1")
    with pytest.raises(OptionError, match=r"option 'bootstrap\.servers' is required"):
        parse(topic="t")


def test_two_spellings_of_one_option_are_refused() -> None:
    with pytest.raises(OptionError, match=r"'topic' and 'topics'.*same option"):
        parse(bootstrap_servers="h:1", topic="a", topics="b")


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"minPartitions": "0"}, "option 'minPartitions' = '0' is invalid: must be between 1"),
        ({"minPartitions": "x"}, "option 'minPartitions' = 'x' is invalid"),
        ({"bootstrap.servers": "nohost"}, "option 'bootstrap.servers' = 'nohost' is invalid"),
        ({"bootstrap.servers": "h:99999"}, "invalid bootstrap server 'h:99999'"),
        ({"topic": " , "}, "option 'topic' = ' , ' is invalid: no topic name"),
        ({"startingOffsets": "{bad"}, "option 'startingOffsets' = '{bad' is invalid: not JSON"),
        ({"startingOffsets": '{"t":{"0":-3}}'}, "offset of t-0 must be an integer >= -2"),
        ({"startingOffsets": '{"t":{"x":1}}'}, "partition 'x' of 't' is not a number"),
        ({"startingOffsets": '{"t":5}'}, "topic 't' must map to an object of partitions"),
    ],
)
def test_malformed_values_name_the_option(options: dict[str, str], expected: str) -> None:
    raw = {"bootstrap.servers": "h:1", "topic": "t"} | options
    with pytest.raises(OptionError) as info:
        parse_options({k.lower(): v for k, v in raw.items()}, SPECS, source="shoal")
    assert expected in str(info.value)


def test_offsets_json_parses_per_partition() -> None:
    assert parse_offsets('{"a":{"0":23,"1":-2},"b":{"0":-1}}') == {
        "a": {0: 23, 1: -2},
        "b": {0: -1},
    }
    assert parse_offsets(" Latest ") == "latest"


def test_spark_owned_options_are_ignored() -> None:
    parsed = parse_options(
        {"bootstrap.servers": "h:1", "topic": "t", "path": "/x", "checkpointlocation": "/c"},
        SPECS,
        source="shoal",
    )
    assert parsed["topic"] == ("t",)


def test_unreachable_bootstrap_names_the_option() -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(OptionError) as info:
        require_reachable(f"127.0.0.1:{port}")
    assert f"option 'bootstrap.servers' = '127.0.0.1:{port}'" in str(info.value)
    assert "Connection refused" in str(info.value)


def test_probe_timeout_limit_fails_a_silent_broker_in_time() -> None:
    """PROBE_TIMEOUT_MS, hit: a broker that accepts but never answers fails the check
    (naming the option) once the probe's time is up, not after the request timeout."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        bootstrap = f"127.0.0.1:{silent.getsockname()[1]}"
        start = time.monotonic()
        with pytest.raises(OptionError, match=r"option 'bootstrap.servers' = .*no answer"):
            require_reachable(bootstrap)
        assert time.monotonic() - start < 2 * PROBE_TIMEOUT_MS / 1000


def test_cached_clients_are_closed_at_exit(spark_broker: BrokerProcess) -> None:
    """`close_cached_clients` (registered with atexit) closes this process's cached
    connections; the next `client_for` opens a fresh client."""
    client = client_for(spark_broker.bootstrap)
    assert client_for(spark_broker.bootstrap) is client
    client.metadata([])
    connections = list(client._connections.values())
    assert connections and not any(c.closed for c in connections)
    close_cached_clients()
    assert all(c.closed for c in connections)
    fresh = client_for(spark_broker.bootstrap)
    assert fresh is not client
    fresh.metadata([])


# ---- through Spark: reported at planning, before any job


@pytest.fixture(scope="module")
def topic(spark_broker: BrokerProcess) -> str:
    name = topic_name("spark-opts")
    create_topic(spark_broker.bootstrap, name, partitions=2)
    p = producer(spark_broker.bootstrap)
    for i in range(10):
        p.produce(name, value=b"v%d" % i, partition=i % 2)
    flush_all(p)
    return name


@pytest.fixture
def planning_error(spark: Any) -> Iterator[Callable[[Callable[[], object]], str]]:
    """Run an action that must fail while Spark plans it: its message, after checking
    that no Spark job was started."""
    from pyspark.errors import AnalysisException

    context = spark.sparkContext

    def run(action: Callable[[], object]) -> str:
        group = f"shoal-options-{uuid.uuid4().hex}"
        context.setJobGroup(group, "an action that must fail at planning")
        with pytest.raises(AnalysisException) as info:
            action()
        assert context.statusTracker().getJobIdsForGroup(group) == []
        return str(info.value)

    yield run
    context.setLocalProperty("spark.jobGroup.id", None)


def test_spark_read_reports_unknown_option(
    spark: Any, spark_broker: BrokerProcess, topic: str, planning_error: Any
) -> None:
    reader = (
        spark.read.format("shoal")
        .option("bootstrap.servers", spark_broker.bootstrap)
        .option("topic", topic)
        .option("startingOffset", "earliest")
    )
    message = planning_error(lambda: reader.load().collect())
    assert "unknown option 'startingoffset'" in message
    assert "did you mean 'startingOffsets'" in message


def test_spark_read_reports_missing_topic(
    spark: Any, spark_broker: BrokerProcess, planning_error: Any
) -> None:
    reader = spark.read.format("shoal").option("bootstrap.servers", spark_broker.bootstrap)
    assert "option 'topic' is required" in planning_error(lambda: reader.load().collect())


def test_spark_read_reports_unreachable_broker(spark: Any, planning_error: Any) -> None:
    reader = spark.read.format("shoal").option("bootstrap.servers", "127.0.0.1:1")
    message = planning_error(lambda: reader.option("topic", "t").load().collect())
    assert "option 'bootstrap.servers' = '127.0.0.1:1'" in message
    assert "Connection refused" in message


def test_spark_read_reports_unknown_topic(
    spark: Any, spark_broker: BrokerProcess, planning_error: Any
) -> None:
    reader = (
        spark.read.format("shoal")
        .option("bootstrap.servers", spark_broker.bootstrap)
        .option("topic", "no-such-topic")
    )
    message = planning_error(lambda: reader.load().collect())
    assert "option 'topic' = 'no-such-topic'" in message
    assert "UNKNOWN_TOPIC_OR_PARTITION" in message


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("startingOffsets", "latest", "option 'startingOffsets' cannot be \"latest\""),
        ("endingOffsets", "earliest", "option 'endingOffsets' cannot be \"earliest\""),
        ("startingOffsets", '{"TOPIC":{"0":1}}', "must give an offset for every partition"),
        ("endingOffsets", '{"TOPIC":{"0":99,"1":-1}}', "offset 99 of TOPIC-0 is outside the log"),
        ("startingOffsets", '{"other":{"0":1}}', "names topic 'other', which is not read"),
    ],
)
def test_spark_read_reports_bad_offsets(
    spark: Any,
    spark_broker: BrokerProcess,
    topic: str,
    planning_error: Any,
    option: str,
    value: str,
    expected: str,
) -> None:
    reader = (
        spark.read.format("shoal")
        .option("bootstrap.servers", spark_broker.bootstrap)
        .option("topic", topic)
        .option(option, value.replace("TOPIC", topic))
    )
    assert expected.replace("TOPIC", topic) in planning_error(lambda: reader.load().collect())


def test_spark_write_reports_option_and_column_mistakes(
    spark: Any, spark_broker: BrokerProcess, topic: str, planning_error: Any
) -> None:
    values = spark.range(3).selectExpr("cast(id as string) as value")

    def write(frame: Any, **options: str) -> Callable[[], object]:
        writer = frame.write.format("shoal").mode("append")
        for key, value in options.items():
            writer = writer.option(key.replace("_", "."), value)
        return writer.save  # type: ignore[no-any-return]

    bootstrap = spark_broker.bootstrap
    assert "unknown option 'linger.ms'" in planning_error(
        write(values, bootstrap_servers=bootstrap, topic=topic, linger_ms="5")
    )
    assert "option 'topic' is required" in planning_error(
        write(values, bootstrap_servers=bootstrap)
    )
    assert "needs a 'value' column" in planning_error(
        write(spark.range(3), bootstrap_servers=bootstrap, topic=topic)
    )
    assert "column 'partition' is bigint; the sink needs int" in planning_error(
        write(
            values.selectExpr("value", "1L as partition"), bootstrap_servers=bootstrap, topic=topic
        )
    )
    assert "option 'bootstrap.servers' = '127.0.0.1:1'" in planning_error(
        write(values, bootstrap_servers="127.0.0.1:1", topic=topic)
    )
