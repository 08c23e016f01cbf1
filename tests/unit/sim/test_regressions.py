"""Seeds that once failed, kept so that they keep passing. Each entry says what the
seed found (`python -m shoal.sim --seed N --verbose` prints its schedule)."""

from __future__ import annotations

import pytest

from shoal.sim.run import run_seed

REGRESSION_SEEDS = {
    214: "a torn state write after a load whose read recorded a new leader epoch: the "
    "simulator tore into the read's record (harness bug: reads that append were not "
    "tracked as writes)",
    299: "the same, with the torn write in the first step after a crash",
}


@pytest.mark.parametrize("seed", sorted(REGRESSION_SEEDS))
def test_seed_holds(seed: int) -> None:
    result = run_seed(seed)
    assert result.violation is None, (REGRESSION_SEEDS[seed], result.violation)
