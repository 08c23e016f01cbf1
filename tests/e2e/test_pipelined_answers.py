"""Answers to a client's pipelined requests (server/net/connection.py): Shoal holds a
response while the next request of the pipeline is already in hand, so that they leave
in one write, but never behind a request that waits on purpose. Kafka's processor
sends each response as soon as its handler is done; a Metadata answer pipelined ahead
of a long-poll Fetch must not wait out the Fetch's MaxWaitMs."""

from __future__ import annotations

from shoal.client import requests
from tests.support.broker import BrokerProcess
from tests.support.raw_wire import answer_times
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

MAX_WAIT_MS = 2000
"""The Fetch's MaxWaitMs on an empty partition: it parks that long."""
PROMPT_S = 1.0
"""An answer not held behind the Fetch comes well within this on a loaded machine."""


def test_a_metadata_answer_does_not_wait_for_the_fetch_pipelined_after_it(
    broker: BrokerProcess,
) -> None:
    topic = topic_name("pipelined")
    create_topic(broker.bootstrap, topic)
    metadata = requests.metadata([topic]).build(12)
    position = requests.FetchPosition(0, 1 << 20)
    fetch = requests.fetch({(topic, 0): position}, max_wait_ms=MAX_WAIT_MS).build(12)
    # warm: a first Metadata on a cold broker can outlast a connection's turn, whose
    # end writes held answers anyway (limits.CONNECTION_TURN_MS)
    call1(broker.bootstrap, metadata)
    times = answer_times(broker.bootstrap, metadata, fetch)
    assert times[2] >= MAX_WAIT_MS / 1000 * 0.9, times  # the Fetch did park
    assert times[1] < PROMPT_S, times  # the Metadata answer left before it
