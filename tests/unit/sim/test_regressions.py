"""Seeds that once failed, kept so that they keep passing. Each entry says what the
seed found (`python -m shoal.sim --seed N --verbose` prints its schedule)."""

from __future__ import annotations

import pytest

from shoal.sim.run import COORDINATORS, run_seed

REGRESSION_SEEDS = {
    214: "a torn state write after a load whose read recorded a new leader epoch: the "
    "simulator tore into the read's record (harness bug: reads that append were not "
    "tracked as writes)",
    299: "the same, with the torn write in the first step after a crash",
    741: "a lock expiry archived records at the delivery limit, its state write failed "
    "(the transition stands) and the SPSO passed them in memory; the member's late "
    "ACCEPT of them succeeded silently (below the SPSO, share-partition.md §8) and the "
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


COORDINATOR_SEEDS = {
    279: "a late answer to an earlier InitProducerId took the client back an epoch, so "
    "the simulated zombie held the current one (harness bug: stale answers are ignored)",
    291: "a transaction begun before a lossy power loss and committed after it: its pending "
    "offsets were lost with the page cache (checker bug: such a transaction promises "
    "nothing for what it wrote before the loss)",
    346: "the same",
    659: "the same",
    1052: "a lossy power loss took __transaction_state's epoch bumps while the data log "
    "kept the higher epoch: the markers are refused and the transaction stays "
    "PrepareCommit (core bug, first counted instead of failed: every __transaction_state "
    "write is now fsynced before it is acted on, server/txn_service.py 'Durability'; the "
    "checker requires no data log ahead of the coordinator's epoch after a restart)",
    1338: "an abort confirmed after a lossy loss, of a transaction whose pending offsets "
    "were written before it: a later commit of the same producer epoch materialised them "
    "(checker bug: such a transaction promises nothing for its earlier writes)",
    1777: "the same kind (found by the long run); also a power loss that took an epoch "
    "bump the data log kept (found by the hunt, as 1052)",
    214: "the same as 1052 (found by running the seeds the long runs had counted as stuck)",
    844: "the same",
    1531: "the same",
    2154: "the same",
    2183: "the same",
    2192: "the same",
    3455: "the same",
    3942: "the same",
    4112: "the same",
    2301: "a group log maintenance pass re-wrote old keys and pruned below them, then a "
    "power loss kept the new log start (its checkpoint is fsynced) and lost the re-written "
    "records (page cache): the group reloaded with members but no group epoch record "
    "(core bug: prune_log now fsyncs the log before moving its start; long run)",
    3125: "a late AddOffsetsToTxn answer from the previous transaction made the client "
    "think the offsets partition was in the current one (harness bug: late answers of an "
    "earlier transaction are ignored; long run)",
    3242: "the same",
}


@pytest.mark.parametrize("seed", sorted(COORDINATOR_SEEDS))
def test_coordinator_seed_holds(seed: int) -> None:
    result = run_seed(seed, scenario=COORDINATORS)
    assert result.violation is None, (COORDINATOR_SEEDS[seed], result.violation)
