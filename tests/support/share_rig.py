"""A broker's services built without a socket on a manual clock, and a share-group rig
on it (topic `t`, member `m1` holding records), for handler and console tests that
drive the server's own entry points; `fetch_acquired`, the one ShareFetch a test
sends straight to a `ShareService` (this rig, the DLQ and share-service rigs)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.server.broker import Broker
from shoal.server.services.share_service import ShareAcknowledgeCall, ShareFetchCall, ShareService
from shoal.share.acknowledge import AckBatch
from shoal.share.sessions import TopicIdPartition
from shoal.share.topic_ids import interned
from tests.unit.log.batches import append, make_batch


def fetch_acquired(
    service: ShareService,
    *,
    member_id: str,
    epoch: int,
    partitions: tuple[TopicIdPartition, ...],
    group_id: str = "g",
) -> int:
    """One ShareFetch that does not wait (500 records at most) through the service's
    own entry point; asserts no top-level error and returns how many records it
    acquired."""
    call = ShareFetchCall(
        group_id=group_id,
        member_id=member_id,
        epoch=epoch,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        max_records=500,
        batch_size=500,
        partitions=partitions,
    )
    outcome = asyncio.run(service.share_fetch(call, connection_id=1))
    assert outcome.error is None, outcome
    return sum(r.count for p in outcome.partitions for r in p.acquired)


def manual_broker(tmp_path: Path, **raw: str) -> Broker:
    config = {
        "log.dirs": str(tmp_path),
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "offsets.topic.num.partitions": "1",
        "share.coordinator.state.topic.num.partitions": "1",
        **raw,
    }
    return Broker(BrokerConfig.from_raw(config), clock=ManualClock())


class ShareRig:
    """Topic `t` (one partition) with 10 records, share group `g` with member `m1`
    assigned to it, and 5 more records acquired by `m1` (offsets 10-14; the group
    starts at the log end, `share.auto.offset.reset=latest`)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.clock = broker.clock
        assert isinstance(self.clock, ManualClock)
        info = broker.logs.create_topic("t", partitions=1, configs={"retention.ms": 60_000})
        self.tp = TopicIdPartition(interned(info.topic_id), 0)  # as a decoded request's
        self.produce(10)
        epoch = self.heartbeat(0, ["t"])
        self.heartbeat(epoch, None)
        self.epoch = 0
        assert self.fetch() == 0  # loads the share-partition at the log end
        self.produce(5)
        assert self.fetch() == 5

    def produce(self, count: int) -> None:
        partition = self.broker.logs.partition("t", 0)
        assert partition is not None
        append(partition, make_batch(count))

    def heartbeat(self, epoch: int, topics: list[str] | None) -> int:
        response = self.broker.group_service.heartbeat(
            group_id="g",
            member_id="m1",
            member_epoch=epoch,
            rack_id=None,
            subscribed_topic_names=topics,
            client_id="client-1",
            client_host="/127.0.0.1",
        )
        assert response.error is None, response
        return response.member_epoch

    def fetch(self) -> int:
        acquired = fetch_acquired(
            self.broker.share_service,
            member_id="m1",
            epoch=self.epoch,
            partitions=(self.tp,) if self.epoch == 0 else (),
        )
        self.epoch += 1
        return acquired

    def acknowledge(self, *batches: AckBatch) -> None:
        outcome = self.broker.share_service.share_acknowledge(
            ShareAcknowledgeCall(
                group_id="g",
                member_id="m1",
                epoch=self.epoch,
                acknowledgements={self.tp: list(batches)},
            )
        )
        assert outcome.error is None
        self.epoch += 1

    def leave(self) -> None:
        self.broker.group_service.heartbeat(
            group_id="g",
            member_id="m1",
            member_epoch=-1,
            rack_id=None,
            subscribed_topic_names=None,
            client_id="client-1",
            client_host="/127.0.0.1",
        )
