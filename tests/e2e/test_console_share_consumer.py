"""`shoal console-share-consumer` as a subprocess against a real broker.

The tool prints values one per line (as Kafka's kafka-console-share-consumer.sh),
acknowledges each printed record with `--ack`, and exits after `--max-messages`, after
`--timeout-ms` without records, or on Ctrl-C / SIGTERM, closing its consumer.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.support.broker import BrokerProcess, running
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    producer,
    share_group,
)
from tests.support.topics import create_topic, topic_name

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("console") / "data", *SHARE_TEST_BROKER_OVERRIDES)


def tool_args(bootstrap: str, topic: str, group: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "shoal.cli.main",
        "console-share-consumer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--group",
        group,
        *extra,
    ]


def run_tool(
    bootstrap: str, topic: str, group: str, *extra: str, timeout_s: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tool_args(bootstrap, topic, group, *extra),
        capture_output=True,
        text=True,
        errors="replace",  # the tool writes a value's bytes as they are, as Kafka's does
        env=ENV,
        timeout=timeout_s,
        check=False,
    )


def setup(
    broker: BrokerProcess, prefix: str, records: list[tuple[bytes | None, bytes]]
) -> tuple[str, str]:
    topic = topic_name(prefix)
    create_topic(broker.bootstrap, topic)
    group = share_group(broker.bootstrap, topic_name(prefix))
    p = producer(broker.bootstrap)
    for key, value in records:
        p.produce(topic, key=key, value=value)
    assert p.flush(30) == 0
    return topic, group


def test_prints_values_and_accepts_them(share_broker: BrokerProcess) -> None:
    values = [b"one", b"two", "drei ✓".encode(), b"bad \xff\xfe utf-8", b""]
    topic, group = setup(share_broker, "console-accept", [(None, v) for v in values])
    done = run_tool(share_broker.bootstrap, topic, group, "--max-messages", "5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == ["one", "two", "drei ✓", "bad \ufffd\ufffd utf-8", "", ""]
    assert "Processed a total of 5 messages" in done.stderr
    # All five were accepted: a second run finds nothing and leaves on --timeout-ms.
    started = time.monotonic()
    again = run_tool(share_broker.bootstrap, topic, group, "--timeout-ms", "2000")
    assert again.returncode == 0, again.stderr
    assert again.stdout == ""
    assert "Processed a total of 0 messages" in again.stderr
    assert time.monotonic() - started < 30


def test_release_and_reject_with_keys_and_delivery_counts(share_broker: BrokerProcess) -> None:
    topic, group = setup(share_broker, "console-ack", [(b"k0", b"v0"), (None, b"v1")])
    bootstrap = share_broker.bootstrap
    shown = ("--print-key", "--print-delivery-count", "--max-messages", "2")
    first = run_tool(bootstrap, topic, group, "--ack", "release", *shown)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "Delivery:1\tk0\tv0\nDelivery:1\tnull\tv1\n"
    second = run_tool(bootstrap, topic, group, "--release", *shown)
    assert second.stdout == "Delivery:2\tk0\tv0\nDelivery:2\tnull\tv1\n", second.stderr
    third = run_tool(
        bootstrap,
        topic,
        group,
        "--ack",
        "reject",
        "--property",
        "print.offset=true",
        "--property",
        "key.separator=|",
        *shown,
    )
    assert third.stdout == "Offset:0|Delivery:3|k0|v0\nOffset:1|Delivery:3|null|v1\n", third.stderr
    rest = run_tool(bootstrap, topic, group, "--timeout-ms", "1500")
    assert (rest.returncode, rest.stdout) == (0, ""), rest.stderr


def test_records_beyond_max_messages_are_released_at_once(share_broker: BrokerProcess) -> None:
    """The tool takes a batch of ten but prints three: the other seven go back to the
    group on exit (not after the 30 s lock), with their delivery count kept."""
    topic, group = setup(share_broker, "console-max", [(None, b"m%d" % i) for i in range(10)])
    bootstrap = share_broker.bootstrap
    first = run_tool(
        bootstrap,
        topic,
        group,
        "--max-messages",
        "3",
        "--consumer-property",
        "max.poll.records=10",
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout == "m0\nm1\nm2\n"
    started = time.monotonic()
    rest = run_tool(
        bootstrap,
        topic,
        group,
        "--max-messages",
        "7",
        "--print-delivery-count",
        "--timeout-ms",
        "20000",
    )
    assert rest.returncode == 0, rest.stderr
    assert rest.stdout == "".join(f"Delivery:2\tm{i}\n" for i in range(3, 10))
    assert time.monotonic() - started < 20


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_closes_cleanly(share_broker: BrokerProcess, stop: signal.Signals) -> None:
    topic, group = setup(share_broker, "console-int", [(None, b"i%d" % i) for i in range(3)])
    bootstrap = share_broker.bootstrap
    tool = subprocess.Popen(
        tool_args(bootstrap, topic, group),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert tool.stdout is not None
        lines = [tool.stdout.readline() for _ in range(3)]
        assert lines == ["i0\n", "i1\n", "i2\n"]
        tool.send_signal(stop)
        out, err = tool.communicate(timeout=60)
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.communicate(timeout=30)
    assert tool.returncode == 0, err
    assert out == ""
    assert "Processed a total of 3 messages" in err
    assert "Traceback" not in err
    # close() sent the acceptances: nothing is left for the group.
    rest = run_tool(bootstrap, topic, group, "--timeout-ms", "1500")
    assert (rest.returncode, rest.stdout) == (0, ""), rest.stderr


def test_unknown_topic_is_a_warning(share_broker: BrokerProcess) -> None:
    done = run_tool(share_broker.bootstrap, topic_name("absent"), "g", "--timeout-ms", "1000")
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert "does not exist (yet)" in done.stderr


def test_unreachable_broker_fails_with_a_clear_message() -> None:
    started = time.monotonic()
    done = run_tool("127.0.0.1:1", "t", "g", "--connect-timeout-ms", "1500")
    assert done.returncode == 1
    assert "cannot reach the broker at 127.0.0.1:1" in done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 30


def test_conflicting_ack_options_are_a_usage_error() -> None:
    done = run_tool("127.0.0.1:1", "t", "g", "--ack", "accept", "--reject")
    assert done.returncode == 2
    assert "at most one of --ack, --release and --reject" in done.stderr
    bad = run_tool("127.0.0.1:1", "t", "g", "--property", "print.nothing=true")
    assert bad.returncode == 2
    assert "unknown --property 'print.nothing'" in bad.stderr


def test_missing_confluent_kafka_names_the_extra() -> None:
    """confluent-kafka is imported only when the tool runs; without it the tool says
    which extra to install."""
    code = (
        "import sys; sys.modules['confluent_kafka'] = None\n"
        "from shoal.cli.main import main\n"
        "sys.exit(main(['console-share-consumer', '--bootstrap-server', '127.0.0.1:1',"
        " '--topic', 't']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "pip install 'shoal[clients]'" in done.stderr
    assert "Traceback" not in done.stderr
