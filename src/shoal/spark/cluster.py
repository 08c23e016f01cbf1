"""The Spark connector's calls to the cluster, over Shoal's one client (`shoal.client`).

Spark runs the connector's code in plain Python worker processes (planner workers on
the driver, pooled executor workers, the long-lived stream runner), none of which has
an event loop, so the batch source and the readers use the blocking `Client`: it
routes each request to the partition's leader, picks every version from the broker's
ApiVersions and retries what Kafka's clients retry, within `API_TIMEOUT_MS`.

`client_for(bootstrap)` caches one `Client` per bootstrap string and worker process:
Spark reuses Python workers across tasks, so a task finds its connections open; they
are closed when the process exits normally (`close_cached_clients`). Keyed by process
id too: a forked worker must not share its parent's sockets.

Errors are the client's: `BrokerUnreachable` / `RequestTimeout` when no broker answers,
`KafkaError` (Kafka's error name in its message) when a broker answers an error code.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from shoal.client import Client, KafkaError, check
from shoal.client import requests as rq
from shoal.client.errors import ErrorCode
from shoal.client.offsets import list_offsets as _list_offsets
from shoal.client.security import ClientSecurity
from shoal.client.settings import ClientSettings

CLIENT_ID: Final = "shoal-spark"
API_TIMEOUT_MS: Final = 30_000
"""How long one call of the connector (retries included) may take."""
REQUEST_TIMEOUT_MS: Final = 30_000
"""How long one request may wait for its response (beyond a Fetch's own max wait)."""
PROBE_TIMEOUT_MS: Final = 5_000
"""How long `check_reachable` tries the bootstrap brokers before `BrokerUnreachable`
(a mistyped address fails the query's planning quickly)."""
FETCH_MAX_BYTES_CAP: Final = 64 * 2**20
"""Largest `max_bytes` a Fetch may ask for (the broker still sends a bigger first
batch whole)."""

EARLIEST: Final = rq.EARLIEST_TIMESTAMP
LATEST: Final = rq.LATEST_TIMESTAMP


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    """One partition of a Fetch response."""

    error: ErrorCode
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: tuple[tuple[int, int], ...]
    """(producer id, first offset) of aborted transactions (read_committed only)."""
    records: bytes


def check_reachable(bootstrap: str, security: ClientSecurity | None = None) -> None:
    """`BrokerUnreachable` unless a bootstrap broker answers Metadata within
    `PROBE_TIMEOUT_MS`."""
    with Client(
        bootstrap,
        client_id=CLIENT_ID,
        api_timeout_ms=PROBE_TIMEOUT_MS,
        settings=ClientSettings(security=security or ClientSecurity()),
    ) as probe:
        probe.metadata([])


def partitions(client: Client, topics: Sequence[str]) -> dict[str, list[int]]:
    """Partition ids of each topic; `KafkaError` (UNKNOWN_TOPIC_OR_PARTITION, ...) for
    a topic that cannot be read (topics are never auto-created)."""
    view = client.metadata(topics)
    found: dict[str, list[int]] = {}
    for topic in topics:
        described = view.topics.get(topic)
        code = ErrorCode.unknown_topic_or_partition if described is None else described.error_code
        check(code, None, context=f"Metadata for topic '{topic}'")
        assert described is not None
        found[topic] = sorted(described.partitions)
    return found


def list_offsets(
    client: Client, topic: str, timestamps: Mapping[int, int], *, isolation_level: int = 0
) -> dict[int, int]:
    """Offset per partition of `topic` for a timestamp (EARLIEST, LATEST or epoch ms)."""
    found = _list_offsets(
        client, {(topic, p): ts for p, ts in timestamps.items()}, isolation_level=isolation_level
    )
    return {p: offset for (_topic, p), offset in found.items()}


def fetch(
    client: Client,
    topic: str,
    partition: int,
    offset: int,
    *,
    max_bytes: int,
    max_wait_ms: int,
    isolation_level: int = 0,
) -> FetchedPartition:
    """Fetch one partition from `offset` at its leader; the partition's error is
    returned in `.error`, except leadership errors, which the client retries."""
    max_bytes = min(max_bytes, FETCH_MAX_BYTES_CAP)
    call = rq.fetch(
        {(topic, partition): rq.FetchPosition(offset, max_bytes)},
        max_wait_ms=max_wait_ms,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
    )
    response = client.to_leader(topic, partition, call, _fetch_error)
    check(response.error_code, None, context=f"Fetch {topic}-{partition}")
    part = response.responses[0].partitions[0]
    return FetchedPartition(
        error=ErrorCode(part.error_code),
        high_watermark=int(part.high_watermark),
        last_stable_offset=int(part.last_stable_offset),
        log_start_offset=int(getattr(part, "log_start_offset", -1)),
        aborted=tuple(
            (int(a.producer_id), int(a.first_offset)) for a in part.aborted_transactions or ()
        ),
        records=part.records or b"",
    )


def _fetch_error(response: Any) -> int:
    if response.error_code != ErrorCode.none:
        return int(response.error_code)
    return int(response.responses[0].partitions[0].error_code)


_CLIENTS: dict[tuple[int, str, ClientSecurity], Client] = {}
_CLIENTS_LOCK = threading.Lock()


def client_for(bootstrap: str, security: ClientSecurity | None = None) -> Client:
    """The worker process's `Client` for `bootstrap` with `security` (created on first
    use; see the module docstring)."""
    security = security or ClientSecurity()
    key = (os.getpid(), bootstrap, security)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = Client(
                bootstrap,
                client_id=CLIENT_ID,
                api_timeout_ms=API_TIMEOUT_MS,
                request_timeout_ms=REQUEST_TIMEOUT_MS,
                settings=ClientSettings(security=security),
            )
        return client


@atexit.register
def close_cached_clients() -> None:
    """Close this process's cached clients (a forked child leaves its parent's alone)."""
    pid = os.getpid()
    with _CLIENTS_LOCK:
        for key in [key for key in _CLIENTS if key[0] == pid]:
            _CLIENTS.pop(key).close()


__all__ = [
    "EARLIEST",
    "FETCH_MAX_BYTES_CAP",
    "LATEST",
    "FetchedPartition",
    "KafkaError",
    "check_reachable",
    "client_for",
    "close_cached_clients",
    "fetch",
    "list_offsets",
    "partitions",
]
