"""Dead-letter queue copies survive SIGKILLs exactly once (dead-letter topics, KIP-1191): the
crash loop of tests/support/dlq_crash.py with 3 kills. The 20-kill run is
bench/dlq_crash.py (figures in bench/results/dlq_crash.json)."""

from __future__ import annotations

import pytest

from tests.support.broker import Brokers
from tests.support.dlq_crash import run_dlq_crash_loop
from tests.support.share_consumers import SHARE_TEST_BROKER_OVERRIDES


@pytest.mark.timeout(400)
def test_sigkills_during_dlq_writes_lose_and_duplicate_nothing(brokers: Brokers) -> None:
    broker = brokers.start(*SHARE_TEST_BROKER_OVERRIDES)
    figures = run_dlq_crash_loop(broker, kills=3, chunk=20, seed=16)
    assert figures["dlq_records"] == figures["records"] > 0
