"""`shoal configs` and Kafka 4.2's kafka-configs.sh, side by side, on both brokers.

- Reads: on the same state (a topic, a group, broker defaults, client and user
  quotas, an ip quota, a SCRAM user), both tools print the same stdout for every
  entity type and shorthand, on Kafka's broker and on Shoal.
- Bad command lines and refused values: the same exit status and Kafka's message
  (for a refused value, the same exception line, whatever broker words it).
- Changes: the same alteration made by each tool on an entity of its own prints the
  same line, and Kafka's tool then describes both entities alike (names aside);
  shared entities (broker defaults) are changed by one tool and read by the other.

About 80 runs of Kafka's tool (a JVM each): 4 minutes on a loaded machine, so the
module is `slow` (`scripts/test -m slow`); test_cli_on_kafka.py keeps a few of its
reads in the default suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.differential.conftest import unique
from tests.support import kafka_reference
from tests.support.cli import shoal
from tests.support.clients import create_topic

pytestmark = pytest.mark.slow
_JVM_NOISE = ("WARNING: Using incubator modules",)


@dataclass(frozen=True)
class Outcome:
    status: int
    stdout: str
    messages: tuple[str, ...]
    """stderr lines but the JVM's notes and Java's stack frames."""


def _messages(stderr: str) -> tuple[str, ...]:
    return tuple(
        line
        for line in stderr.splitlines()
        if line.strip() and not line.startswith(_JVM_NOISE) and not line.startswith("\tat ")
    )


def by_shoal(bootstrap: str, *args: str) -> Outcome:
    done = shoal("configs", "--bootstrap-server", bootstrap, *args)
    assert "Traceback" not in done.stderr, done.stderr
    return Outcome(done.returncode, done.stdout, _messages(done.stderr))


def by_kafka(bootstrap: str, *args: str) -> Outcome:
    done = kafka_reference.run_tool("kafka-configs", "--bootstrap-server", bootstrap, *args)
    return Outcome(done.returncode, done.stdout, _messages(done.stderr))


@dataclass(frozen=True)
class State:
    bootstrap: str
    topic: str
    group: str
    user: str
    client: str


def _ok(outcome: Outcome) -> Outcome:
    assert outcome.status == 0, outcome
    return outcome


@pytest.fixture(scope="module", params=["kafka", "shoal"])
def state(request: pytest.FixtureRequest) -> State:
    """On the param's broker, made with Shoal's tool: a topic with two configs, a group
    config, client quotas (three values; two more clients), a user's client quota, a
    default user quota, another user's quota, an ip quota and a SCRAM user with two
    mechanisms."""
    b = request.getfixturevalue(request.param).bootstrap
    made = State(b, unique("cfg-cli"), unique("cfg-cli-g"), unique("cfg-user"), unique("cfg-app"))
    create_topic(b, made.topic, partitions=1, config={"retention.ms": "86400000"})
    steps = [
        ("--alter", "--topic", made.topic, "--add-config", "cleanup.policy=[compact,delete]"),
        ("--alter", "--group", made.group, "--add-config", "consumer.session.timeout.ms=50000"),
        (
            "--alter",
            "--client",
            made.client,
            "--add-config",
            "producer_byte_rate=1000,consumer_byte_rate=20000000,request_percentage=50",
        ),
        (
            "--alter",
            "--user",
            made.user,
            "--client",
            made.client,
            "--add-config",
            "producer_byte_rate=1024",
        ),
        ("--alter", "--user-defaults", "--add-config", "consumer_byte_rate=500000000"),
        ("--alter", "--ip", "127.0.0.2", "--add-config", "connection_creation_rate=10"),
        # second entities: their order is that of Kafka's Admin client's HashMap
        ("--alter", "--client", f"{made.client}-b", "--add-config", "producer_byte_rate=2048"),
        ("--alter", "--client", f"{made.client}-c", "--add-config", "consumer_byte_rate=1e9"),
        ("--alter", "--user", f"{made.user}-b", "--add-config", "request_percentage=25"),
        ("--alter", "--user", made.user, "--add-config", "SCRAM-SHA-256=[password=pw]"),
        (
            "--alter",
            "--user",
            made.user,
            "--add-config",
            "SCRAM-SHA-512=[iterations=8192,password=pw]",
        ),
    ]
    for step in steps:
        _ok(by_shoal(b, *step))
    return made


READS = [
    pytest.param(("--describe", "--topic", "{topic}"), id="topic"),
    pytest.param(("--describe", "--entity-type", "brokers"), id="brokers"),
    pytest.param(("--describe", "--broker-defaults"), id="broker-defaults"),
    pytest.param(("--describe", "--broker", "1", "--all"), id="broker-all"),
    pytest.param(
        ("--describe", "--entity-type", "broker-loggers", "--entity-name", "1"), id="loggers"
    ),
    pytest.param(("--describe", "--group", "{group}"), id="group"),
    pytest.param(("--describe", "--group", "{group}", "--all"), id="group-all"),
    pytest.param(("--describe", "--entity-type", "clients"), id="clients"),
    pytest.param(("--describe", "--client", "{client}"), id="client"),
    pytest.param(("--describe", "--entity-type", "users"), id="users"),
    pytest.param(("--describe", "--user", "{user}"), id="user"),
    pytest.param(("--describe", "--user-defaults"), id="user-defaults"),
    pytest.param(("--describe", "--user", "{user}", "--client", "{client}"), id="user-client"),
    pytest.param(("--describe", "--entity-type", "ips"), id="ips"),
    pytest.param(("--describe", "--group", "cfg-cli-nobody"), id="unknown-group"),
    pytest.param(("--describe", "--broker", "7"), id="unknown-broker"),
]


@pytest.mark.parametrize("args", READS)
def test_describe_prints_what_kafkas_tool_prints(state: State, args: tuple[str, ...]) -> None:
    filled = [
        a.format(topic=state.topic, group=state.group, user=state.user, client=state.client)
        for a in args
    ]
    mine, theirs = by_shoal(state.bootstrap, *filled), by_kafka(state.bootstrap, *filled)
    assert mine.stdout == theirs.stdout
    assert theirs.stdout.strip()
    unknown = "doesn't exist" in theirs.stdout
    # where Kafka prints that an entity is unknown and exits 0, Shoal exits 1
    assert (mine.status, theirs.status) == ((1, 0) if unknown else (0, 0)), (mine, theirs)


BAD = [
    pytest.param(("--describe", "--entity-type", "bogus"), id="unknown-entity-type"),
    pytest.param(("--describe",), id="no-entity-type"),
    pytest.param(("--alter", "--entity-type", "topics", "--add-config", "a=1"), id="no-name"),
    pytest.param(("--describe", "--broker", "one"), id="broker-not-an-id"),
    pytest.param(("--describe", "--topic", "t", "--entity-type", "topics"), id="duplicate"),
    pytest.param(("--describe", "--topic", "t", "--entity-name", "u"), id="flags-mixed"),
    pytest.param(("--describe", "--group", "g", "--add-config", "a=1"), id="describe-add"),
    pytest.param(("--alter", "--topic", "t"), id="nothing-to-alter"),
    pytest.param(("--alter", "--topic", "{topic}", "--add-config", "a b=1"), id="bad-key"),
    pytest.param(("--alter", "--topic", "{topic}", "--add-config", "novalue"), id="bad-pair"),
    pytest.param(
        ("--alter", "--topic", "{topic}", "--delete-config", "segment.ms"), id="delete-unset"
    ),
    pytest.param(
        ("--alter", "--client", "c", "--add-config", "producer_byte_rate=fast"), id="bad-quota"
    ),
    pytest.param(("--alter", "--client", "c", "--add-config", "bogus=1"), id="client-key"),
    pytest.param(
        ("--alter", "--user-defaults", "--add-config", "SCRAM-SHA-256=[password=p]"),
        id="scram-default-user",
    ),
    pytest.param(
        ("--alter", "--user", "u", "--add-config", "SCRAM-SHA-256=[iterations=10,password=p]"),
        id="scram-iterations",
    ),
    pytest.param(
        ("--alter", "--topic", "{topic}", "--add-config", "retention.ms=abc"), id="invalid-value"
    ),
    pytest.param(
        ("--alter", "--topic", "{topic}", "--add-config", "no.such.config=1"), id="unknown-key"
    ),
]


@pytest.mark.parametrize("args", BAD)
def test_bad_input_gets_kafkas_message_and_status(state: State, args: tuple[str, ...]) -> None:
    """Kafka's message (Kafka's usage text after some differs), or its "Error while
    executing" line and the exception of the broker's refusal (the broker's words)."""
    filled = [a.format(topic=state.topic) for a in args]
    mine, theirs = by_shoal(state.bootstrap, *filled), by_kafka(state.bootstrap, *filled)
    assert theirs.status == 1, theirs
    assert (mine.status, mine.stdout) == (theirs.status, theirs.stdout)
    assert mine.messages[:1] == theirs.messages[:1]
    if theirs.messages[0].startswith("Error while executing"):
        assert mine.messages[1] == theirs.messages[1]  # the exception Kafka prints


CHANGES = [
    pytest.param(
        "topic",
        [
            ("--alter", "--topic", "{e}", "--add-config", "retention.ms=1000,segment.ms=3600000"),
            ("--alter", "--topic", "{e}", "--add-config", "cleanup.policy=[compact,delete]"),
            ("--alter", "--topic", "{e}", "--delete-config", "segment.ms"),
            ("--alter", "--topic", "{e}", "--add-config-file", "{file}"),
        ],
        ("--describe", "--topic", "{e}"),
        id="topic",
    ),
    pytest.param(
        "group",
        [
            ("--alter", "--group", "{e}", "--add-config", "share.record.lock.duration.ms=15000"),
            ("--alter", "--group", "{e}", "--add-config", "consumer.heartbeat.interval.ms=6000"),
            ("--alter", "--group", "{e}", "--delete-config", "share.record.lock.duration.ms"),
        ],
        ("--describe", "--group", "{e}"),
        id="group",
    ),
    pytest.param(
        "client",
        [
            (
                "--alter",
                "--client",
                "{e}",
                "--add-config",
                "producer_byte_rate=10,request_percentage=5",
            ),
            ("--alter", "--client", "{e}", "--delete-config", "request_percentage"),
        ],
        ("--describe", "--client", "{e}"),
        id="client-quota",
    ),
    pytest.param(
        "user",
        [
            ("--alter", "--user", "{e}", "--add-config", "SCRAM-SHA-512=[password=secret]"),
            ("--alter", "--user", "{e}", "--add-config", "consumer_byte_rate=300"),
        ],
        ("--describe", "--user", "{e}"),
        id="user",
    ),
]


@pytest.mark.parametrize(("kind", "steps", "describe"), CHANGES)
def test_changes_by_each_tool_describe_alike(
    state: State,
    kind: str,
    steps: list[tuple[str, ...]],
    describe: tuple[str, ...],
    tmp_path: Path,
) -> None:
    b = state.bootstrap
    file = tmp_path / "add.properties"
    file.write_text("# --add-config-file\nmax.message.bytes = 2000\nmin.insync.replicas=1\n")
    mine, theirs = unique(f"cfg-mine-{kind}"), unique(f"cfg-theirs-{kind}")
    if kind == "topic":
        create_topic(b, mine, partitions=1)
        create_topic(b, theirs, partitions=1)
    for step in steps:
        done_mine = by_shoal(b, *(a.format(e=mine, file=file) for a in step))
        done_theirs = by_kafka(b, *(a.format(e=theirs, file=file) for a in step))
        assert done_mine.status == done_theirs.status == 0, (done_mine, done_theirs)
        assert done_mine.stdout.replace(mine, "E") == done_theirs.stdout.replace(theirs, "E")
    described = [
        by_kafka(b, *(a.format(e=name) for a in describe)).stdout.replace(name, "E")
        for name in (mine, theirs)
    ]
    assert described[0] == described[1]
    assert described[0].strip()


def test_broker_defaults_changed_by_one_tool_read_by_the_other(state: State) -> None:
    b = state.bootstrap
    key = "log.cleaner.delete.retention.ms"
    _ok(by_shoal(b, "--alter", "--broker-defaults", "--add-config", f"{key}=86400001"))
    seen = _ok(by_kafka(b, "--describe", "--broker-defaults")).stdout
    assert f"  {key}=86400001 sensitive=false" in seen
    assert _ok(by_shoal(b, "--describe", "--broker-defaults")).stdout == seen
    _ok(
        by_kafka(
            b, "--alter", "--entity-type", "brokers", "--entity-default", "--delete-config", key
        )
    )
    assert key not in _ok(by_shoal(b, "--describe", "--broker-defaults")).stdout


def test_a_broker_logger_set_by_one_tool_and_reset_by_the_other(state: State) -> None:
    b = state.bootstrap
    listed = _ok(by_kafka(b, "--describe", "--broker-logger", "1")).stdout
    assert _ok(by_shoal(b, "--describe", "--broker-logger", "1")).stdout == listed
    logger, level = listed.splitlines()[1].split()[0].split("=")
    other = "DEBUG" if level != "DEBUG" else "TRACE"
    _ok(by_shoal(b, "--alter", "--broker-logger", "1", "--add-config", f"{logger}={other}"))
    assert f"  {logger}={other} " in _ok(by_kafka(b, "--describe", "--broker-logger", "1")).stdout
    _ok(by_kafka(b, "--alter", "--broker-logger", "1", "--delete-config", logger))
    assert f"  {logger}={other} " not in by_shoal(b, "--describe", "--broker-logger", "1").stdout
    bad = ("--alter", "--broker-logger", "1", "--add-config", "no.such.logger=DEBUG")
    mine, theirs = by_shoal(b, *bad), by_kafka(b, *bad)
    assert (
        (mine.status, mine.messages[:1])
        == (theirs.status, theirs.messages[:1])
        == (
            1,
            ("Invalid broker logger(s): no.such.logger",),
        )
    )
