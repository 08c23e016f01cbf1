"""`__share_group_state` is pruned when the share coordinator loads, not only one
prune interval after the start: a broker that crashes sooner than that (the crash soak
kills one every few seconds) would otherwise replay an ever longer log at each start."""

from __future__ import annotations

import uuid
from pathlib import Path

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.log.manager import LogManager
from shoal.server.services.share_state import ShareStateService
from shoal.share.persister import SharePartitionKey, StateBatch, StateWrite
from shoal.share.states import RecordState
from tests.support.metadata import topic_catalog

KEY = SharePartitionKey("g", uuid.UUID("00000000-0000-4000-8000-000000000001"), 0)
WRITES = 60
PER_SNAPSHOT = 10


def open_service(data_dir: Path, clock: ManualClock) -> tuple[LogManager, ShareStateService]:
    config = BrokerConfig.from_raw(
        {
            "log.dirs": str(data_dir),
            "share.coordinator.snapshot.update.records.per.snapshot": PER_SNAPSHOT,
        }
    )
    logs = LogManager.open(
        data_dir=data_dir, broker_config=config, clock=clock, catalog=topic_catalog(data_dir)
    )
    return logs, ShareStateService.open(logs, config, clock)


def write(service: ShareStateService, first: int) -> None:
    batch = StateBatch(first, first + 9, int(RecordState.ACKNOWLEDGED), 1)
    update = StateWrite(
        key=KEY,
        state_epoch=1,
        leader_epoch=0,
        start_offset=first + 10,
        delivery_complete_count=0,
        state_batches=(batch,),
    )
    assert service.coordinator.write(write=update) is None


def test_a_restart_prunes_before_the_prune_interval(tmp_path: Path) -> None:
    clock = ManualClock()
    logs, service = open_service(tmp_path, clock)
    assert service.coordinator.initialize(key=KEY, state_epoch=1, start_offset=0) is None
    for n in range(WRITES):
        write(service, n * 10)
    written = {p.log_end_offset for p in service.partitions}
    assert max(written) > WRITES  # every write and its snapshots are in one partition
    assert all(p.log_start_offset == 0 for p in service.partitions)  # no timer has fired
    logs.close()

    logs, service = open_service(tmp_path, clock)  # no time passed: no prune interval
    try:
        starts = [p.log_start_offset for p in service.partitions]
        assert max(starts) > WRITES - 2 * PER_SNAPSHOT, starts  # near the last snapshot
        state = service.coordinator.read(key=KEY, leader_epoch=0).state
        assert state is not None and state.start_offset == WRITES * 10
    finally:
        logs.close()

    logs, service = open_service(tmp_path, clock)  # and a load from the pruned log
    try:
        state = service.coordinator.read(key=KEY, leader_epoch=0).state
        assert state is not None and state.start_offset == WRITES * 10
    finally:
        logs.close()
