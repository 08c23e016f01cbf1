"""An open transaction survives SIGKILL: after recovery the last stable offset still
stops read_committed readers at its first offset, and the producer's state (epoch,
sequence) is intact so its next batch is taken in order.

The transaction is opened as an old client would leave one: a transactional batch from
an idempotent producer id, with a transactional id the coordinator does not know, on
a broker with `transaction.partition.verification.enable=false` (so no coordinator ends
it: the log alone is under test)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.requests import READ_COMMITTED, FetchPosition
from tests.support.batches import build_batch, decode_records, values_batch
from tests.support.broker import BrokerProcess, running
from tests.support.topics import create_topic, produce, topic_name
from tests.support.wire import call1, fetched, init_producer_id_request

TRANSACTIONAL_ID = "txn-crash-unverified"


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of the test's own that appends transactional batches unverified."""
    yield from running(tmp_path / "data", "transaction.partition.verification.enable=false")


def _txn_batch(init: Any, sequence: int) -> bytes:
    return build_batch(
        [b"t%d" % sequence, b"t%d" % (sequence + 1)],
        producer_id=int(init.producer_id),
        producer_epoch=int(init.producer_epoch),
        base_sequence=sequence,
        transactional=True,
    )


def _committed_view(bootstrap: str, topic: str) -> tuple[int, int, list[int]]:
    """(last stable offset from ListOffsets, from Fetch, offsets a read_committed
    fetch from 0 returns)."""
    listed = call1(
        bootstrap, requests.list_offsets({(topic, 0): -1}, isolation_level=READ_COMMITTED)
    )
    (answer,) = listed.topics[0].partitions
    assert answer.error_code == ErrorCode.none, answer
    partition = fetched(
        call1(
            bootstrap,
            requests.fetch(
                {(topic, 0): FetchPosition(offset=0, max_bytes=1 << 20)},
                max_wait_ms=0,
                min_bytes=0,
                isolation_level=READ_COMMITTED,
            ),
        )
    )
    offsets = [r.offset for r in decode_records(partition.records or b"")]
    return int(answer.offset), int(partition.last_stable_offset), offsets


def test_open_transaction_survives_sigkill(fresh_broker: BrokerProcess) -> None:
    bootstrap = fresh_broker.bootstrap
    topic = topic_name("txn-crash")
    create_topic(bootstrap, topic, partitions=1)
    init = call1(bootstrap, init_producer_id_request())
    assert produce(bootstrap, topic, values_batch(3)) == 0
    assert produce(bootstrap, topic, _txn_batch(init, 0), transactional_id=TRANSACTIONAL_ID) == 3
    assert produce(bootstrap, topic, values_batch(2)) == 5
    assert _committed_view(bootstrap, topic) == (3, 3, [0, 1, 2])

    fresh_broker.restart()  # SIGKILL, then start on the same data directory

    assert _committed_view(fresh_broker.bootstrap, topic) == (3, 3, [0, 1, 2])
    # The producer's sequence survived too: the next batch follows without a gap.
    assert (
        produce(
            fresh_broker.bootstrap, topic, _txn_batch(init, 2), transactional_id=TRANSACTIONAL_ID
        )
        == 7
    )
