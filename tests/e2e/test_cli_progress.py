"""Progress of long CLI work (shoal/progress.py), with stderr piped: a line per tenth.

`shoal topics --delete` of more topics than one DeleteTopics request carries, and
`shoal share-groups --reset-offsets --execute` over more partitions than one
AlterShareGroupOffsets request carries, write `deleted N of M topics` / `reset N of M
partitions` lines to stderr and still do all of the work; smaller work writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shoal.cli.share_groups import RESET_PARTITIONS_PER_REQUEST
from shoal.cli.topics import DELETE_TOPICS_PER_REQUEST
from tests.support.broker import BrokerProcess, running
from tests.support.cli import rows, shoal
from tests.support.topics import create_topic, topic_name


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("cli-progress") / "data")


def test_deleting_many_topics_reports_progress(broker: BrokerProcess) -> None:
    prefix = topic_name("prog-del")
    count = DELETE_TOPICS_PER_REQUEST + 5
    for i in range(count):
        create_topic(broker.bootstrap, f"{prefix}-{i:02d}")
    done = shoal(
        "topics", "--bootstrap-server", broker.bootstrap, "--delete", "--topic", f"{prefix}-.*"
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"deleted {DELETE_TOPICS_PER_REQUEST} of {count} topics",
        f"deleted {count} of {count} topics",
    ]
    listed = shoal("topics", "--bootstrap-server", broker.bootstrap, "--list").stdout
    assert not [line for line in listed.splitlines() if line.startswith(prefix)]


def test_deleting_a_few_topics_is_quiet(broker: BrokerProcess) -> None:
    prefix = topic_name("prog-few")
    for i in range(2):
        create_topic(broker.bootstrap, f"{prefix}-{i}")
    done = shoal(
        "topics", "--bootstrap-server", broker.bootstrap, "--delete", "--topic", f"{prefix}-.*"
    )
    assert (done.returncode, done.stderr) == (0, "")


def test_resetting_many_partitions_reports_progress(broker: BrokerProcess) -> None:
    partitions = RESET_PARTITIONS_PER_REQUEST * 2 + 10
    topic = topic_name("prog-reset")
    create_topic(broker.bootstrap, topic, partitions=partitions)
    group = topic_name("prog-reset-g")
    done = shoal(
        "share-groups",
        "--bootstrap-server",
        broker.bootstrap,
        "--reset-offsets",
        "--group",
        group,
        "--topic",
        topic,
        "--to-earliest",
        "--execute",
    )
    assert done.returncode == 0, done.stderr
    per = RESET_PARTITIONS_PER_REQUEST
    assert done.stderr.splitlines() == [
        f"reset {per} of {partitions} partitions",
        f"reset {2 * per} of {partitions} partitions",
        f"reset {partitions} of {partitions} partitions",
    ]
    assert len(rows(done.stdout)) == partitions
    described = shoal(
        "share-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--group", group
    )
    assert len([r for r in rows(described.stdout) if r.get("TOPIC") == topic]) == partitions
