"""Seeds that once failed, kept so that they keep passing. Each entry says what the
seed found (`python -m shoal.sim --seed N --verbose` prints its schedule)."""

from __future__ import annotations

import dataclasses

import pytest

from shoal.sim.faults import FaultRates
from shoal.sim.run import SHELL, run_seed

REGRESSION_SEEDS = {
    214: "a torn state write after a load whose read recorded a new leader epoch: the "
    "simulator tore into the read's record (harness bug: reads that append were not "
    "tracked as writes)",
    299: "the same, with the torn write in the first step after a crash",
    741: "a lock expiry archived records at the delivery limit, its state write failed "
    "(the transition stands) and the SPSO passed them in memory; the member's late "
    "ACCEPT of them succeeded silently (below the SPSO, docs/design/share-partition.md §8) and the "
    "checker took it for a promise (checker bug: acks below the SPSO promise nothing)",
    798: "the same (found by the 10,000-seed run, as were the next ones)",
    2204: "the same",
    3150: "the same",
    4022: "the same",
    4830: "the same",
    5394: "the same",
    8678: "the same",
    9001: "the same",
    9: "a power loss under the page cache kept the state topic's ACCEPTs of records the "
    "data log lost: the share-partition loaded its start offset past the log end and would "
    "have skipped the records produced after the restart up to it (core bug: the load now "
    "cuts the persisted state to the log end, share/persister.py within_log)",
    157: "the same",
    422: "after that cut, a stale persisted batch past the old log end (AVAILABLE, "
    "delivery count 2) outlived the cut, which was made in memory only, and won the "
    "coordinator's merge (the higher delivery count) over a new record's confirmed "
    "ACCEPT at the same offset (core bug: the cut is now persisted, persist_cut; found "
    "by the long run)",
}


@pytest.mark.parametrize("seed", sorted(REGRESSION_SEEDS))
def test_seed_holds(seed: int) -> None:
    result = run_seed(seed)
    assert result.violation is None, (REGRESSION_SEEDS[seed], result.violation)


SHELL_RATES = dataclasses.replace(FaultRates(), power_loss=1.0, shell_crash=0.15)
"""The shell scenario's rates when hunting for losses: every crash a power loss."""
SHELL_SEEDS = {
    7: "with `__transaction_state` appended without its fsync (the core bug the retired "
    "coordinator scenario found as seed 1052, put back to see that the shell scenario "
    "finds it too), a page-cache power loss took the producer's epoch bump: its previous "
    "epoch was current again and the zombie's Produce was accepted",
    29: "the same loss, seen as a data log holding the producer at an epoch above its "
    "coordinator's after the restart (the markers would be refused)",
    17: "with `prune_log` moving a coordinator log's start without fsyncing the log first "
    "(the core bug the retired coordinator scenario found as seed 2301, put back), a "
    "page-cache power loss kept the new log start and lost the re-written records: the "
    "group reloaded its members (epoch 4) without its epoch record (group epoch 0)",
}


@pytest.mark.parametrize("seed", sorted(SHELL_SEEDS))
def test_shell_seed_holds(seed: int) -> None:
    result = run_seed(seed, steps=40, scenario=SHELL, rates=SHELL_RATES)
    assert result.violation is None, (SHELL_SEEDS[seed], result.violation)


HUNT_RATES = dataclasses.replace(
    FaultRates(),
    power_loss=0.5,
    shell_crash=0.12,
    clean_restart=0.08,
    connection_drop=0.3,
    slow_disk=0.1,
    slow_delivery=0.05,
    client_stall=0.06,
)
"""The shell scenario's rates of the hunting run that found seed 5097."""


FSYNC_SEEDS = {
    5097: "under `log.flush.interval.messages=1` a ShareFetch acquired a record whose fsync "
    "(DiskIO, in a worker) had not run yet; its ACCEPT was written to __share_group_state "
    "(fsynced); a power loss dropped the record; after the restart a new acknowledged "
    "record landed at that offset before the share-partition loaded, so the load's cut to "
    "the log end (share/persister.py within_log) did not cut it and the new record was "
    "taken as accepted, never delivered (broker bug: the high watermark now stays below a "
    "deferred policy fsync until it is finished, log/partition.py, as Kafka's does below "
    "the flush inside UnifiedLog.append; the seed found it on the simulator's own branch)",
    5000: "the same loss on the tree with the coordinator runtime (seed 5097's schedule "
    "no longer reaches it there): a page-cache power loss took sim-share-1's unfsynced "
    "record, a new one acknowledged at offset 67 was never delivered",
}


@pytest.mark.parametrize("seed", sorted(FSYNC_SEEDS))
def test_a_record_acknowledged_after_its_fsync_is_delivered_to_the_share_group(seed: int) -> None:
    result = run_seed(seed, steps=60, scenario=SHELL, rates=HUNT_RATES)
    assert result.violation is None, (FSYNC_SEEDS[seed], result.violation)
