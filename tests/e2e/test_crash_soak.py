"""The crash soak, short: a few random SIGKILLs under the mixed load of
tests/support/crash_soak.py (idempotent producer, group fetcher, ShareConsumers with
ACCEPT / RELEASE / REJECT, admin resets), everything checked after each restart.
The long run (>= 100 kills) is `python -m bench.crash_soak --kills 100`; a longer
in-suite run is marked slow.
"""

from __future__ import annotations

import random

import pytest

from tests.support.broker import Brokers
from tests.support.crash_soak import Soak
from tests.support.share_consumers import SHARE_TEST_BROKER_OVERRIDES
from tests.support.topics import topic_name


def soak(brokers: Brokers, kills: int) -> None:
    seed = random.randrange(2**32)
    broker = brokers.start(*SHARE_TEST_BROKER_OVERRIDES)
    report = Soak(
        broker,
        kills=kills,
        seed=seed,
        topic=topic_name("soak"),
        log=print,
    ).run()
    print(report.summary())
    assert report.kills == kills
    assert report.acked == report.produced > 0
    assert report.lost == report.duplicated == 0
    assert report.share_done > 0
    assert report.fetch_committed > 0


@pytest.mark.timeout(240)
def test_crash_soak_short(brokers: Brokers) -> None:
    soak(brokers, kills=5)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_crash_soak_long(brokers: Brokers) -> None:
    soak(brokers, kills=30)
