"""ShareFetch (78) / ShareAcknowledge (79) at the wire: response readers in the
shape tests compare against, and set-up helpers (group configs, a joined member,
produced records). The requests are the client's (`shoal.client.share_requests`:
`share_fetch`, `share_acknowledge`, `AckBatch`; acknowledge types are
`shoal.protocol.share.AcknowledgeType`); `fetch_now` is the `share_fetch` most tests
send.

Partitions are `(topic id, partition)` pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from shoal.client.aio import Connection
from shoal.client.calls import Call
from shoal.client.requests import GROUP_RESOURCE, ConfigChange, incremental_alter_configs
from shoal.client.share_requests import IdPartition, acquired_of, share_fetch
from tests.support.batches import values_batch
from tests.support.share_groups import Member
from tests.support.topics import produce
from tests.support.wire import call1, with_connection

TP = IdPartition


def acquired(response: Any) -> dict[TP, list[tuple[int, int, int]]]:
    """{(topic id, partition): [(first, last, delivery count)]} of a successful
    ShareFetch response (partitions that acquired nothing are left out)."""
    assert response.error_code == ErrorCode.none, response
    return {tp: list(spans) for tp, spans in acquired_of(response).items()}


def fetch_now(
    group_id: str, member_id: str, session_epoch: int, *, max_records: int = 500, **fields: Any
) -> Call:
    """`share_fetch` that answers at once (MaxWaitMs 0), by default with room for 500
    records; `fields` are its other arguments (`partitions`, `acks`, `batch_size`, ...)."""
    return share_fetch(
        group_id=group_id,
        member_id=member_id,
        session_epoch=session_epoch,
        max_wait_ms=0,
        max_records=max_records,
        **fields,
    )


# ---- set-up


def set_group_configs(bootstrap: str, group_id: str, configs: Mapping[str, str]) -> None:
    """IncrementalAlterConfigs SET of share-group configs; asserts success."""
    changes = [ConfigChange(name, value) for name, value in configs.items()]
    (result,) = call1(
        bootstrap, incremental_alter_configs({(GROUP_RESOURCE, group_id): changes})
    ).responses
    assert result.error_code == ErrorCode.none, result


def join(bootstrap: str, group_id: str, *topics: str) -> str:
    """A member joins (initialising the group's share state for `topics`); returns its
    member id. It is never heartbeated again: share requests need no membership."""

    async def go(conn: Connection) -> str:
        member = Member(group_id)
        await member.join(conn, list(topics))
        return member.member_id

    return with_connection(bootstrap, go)


def produce_values(
    bootstrap: str,
    topic: str,
    *counts: int,
    partition: int = 0,
    base_timestamp: int | None = None,
) -> None:
    """One batch of `count` records per count, in order (stamped `base_timestamp`, else
    the batch builder's fixed 2023 time)."""
    stamp = {} if base_timestamp is None else {"base_timestamp": base_timestamp}
    for count in counts:
        produce(bootstrap, topic, values_batch(count, **stamp), partition=partition)
