"""`shoal configs --describe` of topics as a subprocess against a real broker: the
lines kafka-configs.sh prints (the differential test compares them with Kafka's own
tool), --all, every topic, an unknown topic, and command lines it refuses."""

from __future__ import annotations

from tests.support.broker import BrokerProcess
from tests.support.cli import shoal
from tests.support.topics import create_topic, topic_name


def configs(broker: BrokerProcess, *args: str) -> tuple[int, str, str]:
    done = shoal("configs", "--bootstrap-server", broker.bootstrap, *args)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def test_describe_shows_the_topics_own_configs_with_their_synonyms(
    broker: BrokerProcess,
) -> None:
    name = topic_name("cli-cfg")
    create_topic(
        broker.bootstrap, name, configs={"retention.ms": "86400000", "max.message.bytes": "2000"}
    )
    # Kafka 4.2's lines for these (its broker's synonyms: the broker-wide key's default)
    expected = (
        f"Dynamic configs for topic {name} are:\n"
        "  max.message.bytes=2000 sensitive=false synonyms="
        "{DYNAMIC_TOPIC_CONFIG:max.message.bytes=2000, DEFAULT_CONFIG:message.max.bytes=1048588}\n"
        "  retention.ms=86400000 sensitive=false synonyms="
        "{DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}\n"
    )
    assert configs(broker, "--describe", "--topic", name) == (0, expected, "")
    by_entity = configs(broker, "--describe", "--entity-type", "topics", "--entity-name", name)
    assert by_entity == (0, expected, "")


def test_all_lists_every_config_sorted_and_every_topic_is_described(
    broker: BrokerProcess,
) -> None:
    name = topic_name("cli-cfg-all")
    create_topic(broker.bootstrap, name, configs={"retention.ms": "1000"})
    code, out, err = configs(broker, "--describe", "--topic", name, "--all")
    assert code == 0, err
    head, *lines = out.splitlines()
    assert head == f"All configs for topic {name} are:"
    names = [line.strip().split("=", 1)[0] for line in lines]
    assert names == sorted(names) and len(names) > 20
    assert (
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000"
        in out
    )
    assert (
        "  segment.bytes=1073741824 sensitive=false synonyms={DEFAULT_CONFIG:log.segment.bytes="
        in out
    )

    code, out, err = configs(broker, "--describe", "--entity-type", "topics")
    assert code == 0, err
    assert f"Dynamic configs for topic {name} are:\n  retention.ms=1000 " in out


def test_an_unknown_topic_and_refused_usage(broker: BrokerProcess) -> None:
    name = topic_name("cli-cfg-none")
    code, out, _ = configs(broker, "--describe", "--topic", name)
    assert (code, out) == (
        1,
        f"The topic '{name}' doesn't exist and doesn't have dynamic config.\n",
    )
    code, out, err = configs(broker, "--describe", "--topic", name, "--all")
    assert (code, out) == (1, f"All configs for topic {name} are:\n")
    assert "UnknownTopicOrPartitionException" in err
    for bad, message in (
        (("--describe", "--topic", name, "--entity-type", "topics"), "Duplicate entity type"),
        (("--describe", "--entity-type", "bogus"), "Invalid entity type bogus"),
        (("--alter", "--entity-type", "topics", "--add-config", "a=1"), "An entity name must"),
    ):
        code, out, err = configs(broker, *bad)
        assert (code, out) == (1, ""), bad  # Kafka's status for a bad command line
        assert message in err, bad
