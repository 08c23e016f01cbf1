"""The broker's warm-up: what the first requests would otherwise pay for mid-stream.

kio imports a message's module the first time a (key, version) is used, and Shoal
builds its decoders, composed writers and field-name sets lazily. Each such first use
costs ~5-20 ms of the loop; a client's first ShareFetch, ShareAcknowledge or Produce
took several at once (~0.5 s of broker CPU in one harness run), and on a paced stream
that arrives mid-run they were the p99 (docs/performance/latency.md).

`warm_up` is a task started with the listener: for the APIs on the per-record path and
a client's start-up (`HOT_APIS`), it loads their newest served versions
(`WARM_VERSIONS`), one version per loop pass, so broker start is not delayed and a
request arriving meanwhile waits for one step at most. It begins `WARM_START_DELAY_S`
after the listener is bound: a request's way through the loop (accept, read, handle,
write) takes several passes, and with a step in each the broker's first answer (a
client's ApiVersions, a start-up probe's) came ~20 ms later (docs/performance/startup.md).
Other versions and APIs (admin) load on first use as before: warming versions nobody
uses would only add stalls while clients are active. A thread was tried: competing
for the GIL with the loop it took ~5 s on the shared machine and ran into the
measured window.

When it is done, `gc.freeze()` moves everything alive then (configs, loaded state,
the message modules) to the permanent generation, so the collector's full passes no
longer walk it: their pauses scale with what requests allocated since.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable, Mapping

from shoal.clock import measure_ns
from shoal.protocol import schema
from shoal.server.registry import ApiHandler

log = logging.getLogger(__name__)

HOT_APIS = (78, 79, 0, 76, 3, 18, 10, 1, 2, 8, 9, 11, 12, 13, 14, 22, 68)
"""ShareFetch, ShareAcknowledge, Produce, ShareGroupHeartbeat, Metadata, ApiVersions,
FindCoordinator, Fetch, ListOffsets, OffsetCommit, OffsetFetch, JoinGroup, Heartbeat,
LeaveGroup, SyncGroup, InitProducerId, ConsumerGroupHeartbeat: in this order."""


WARM_START_DELAY_S = 0.05
"""How long after the listener is bound the warm-up begins (its first requests first)."""

WARM_VERSIONS = 2
"""Served versions warmed per hot API, the newest ones (what current clients such as
librdkafka 2.16 and kafka-python negotiate); older ones load on first use."""

CLIENT_MAX_VERSIONS = {0: 10, 1: 16, 2: 7}
"""Hot APIs served past the newest version librdkafka 2.16 sends (Produce 10, Fetch 16,
ListOffsets 7; the newer ones serve Kafka's own clients): warmed from that version
down, so the versions on the per-record path of the usual clients stay warm."""


def warm_steps(handlers: Mapping[int, ApiHandler]) -> list[tuple[int, int]]:
    """The (api key, version) pairs `warm_up` loads, in order: the newest warmed
    version of every hot API (`newest_warmed`), then the next newest of each, and so on."""
    hot = [handlers[key] for key in HOT_APIS if key in handlers]
    return [
        (handler.api_key, newest_warmed(handler) - back)
        for back in range(WARM_VERSIONS)
        for handler in hot
        if newest_warmed(handler) - back >= handler.min_version
    ]


def newest_warmed(handler: ApiHandler) -> int:
    """The newest served version, or the client's if it is older (`CLIENT_MAX_VERSIONS`)."""
    return min(handler.max_version, CLIENT_MAX_VERSIONS.get(handler.api_key, handler.max_version))


async def warm_up(
    handlers: Mapping[int, ApiHandler],
    *,
    stopping: Callable[[], bool] = lambda: False,
    delay_s: float = 0.0,
) -> int:
    """After `delay_s`, load `warm_steps` one per loop pass, then `gc.freeze()`. Returns
    the number of versions loaded (fewer if the broker started stopping)."""
    if delay_s > 0:
        await asyncio.sleep(delay_s)
    started_ns = measure_ns()
    loaded = 0
    for key, version in warm_steps(handlers):
        if stopping():
            return loaded
        loaded += schema.preload(key, range(version, version + 1))
        await asyncio.sleep(0)
    gc.freeze()
    log.info(
        "warm-up: %d API versions loaded in %.0f ms; %d objects frozen",
        loaded,
        (measure_ns() - started_ns) / 1e6,
        gc.get_freeze_count(),
    )
    return loaded
