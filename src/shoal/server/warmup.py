"""The broker's warm-up: what the first requests would otherwise pay for on the loop.

kio imports a message's module the first time a (key, version) is used, and Shoal
builds its decoders, composed writers and field-name sets lazily. Each such first use
costs ~5-20 ms of the loop; a client's first ShareFetch or Produce took several at
once, and on a paced stream that arrives mid-run they were the p99 (docs/latency.md).
`start_warmup` loads them for every API and version the broker serves in a daemon
thread right after the listener opens, so broker start is not delayed (a request that
arrives first simply loads its own, under the import lock, as before).

When it is done, `gc.freeze()` moves everything alive then (configs, loaded state,
the ~200 message modules) to the permanent generation, so the collector's full
passes no longer walk it: their pauses scale with what requests allocate since.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable, Mapping

from shoal.clock import measure_ns
from shoal.protocol import schema
from shoal.server.registry import ApiHandler

log = logging.getLogger(__name__)


def warm(handlers: Mapping[int, ApiHandler]) -> int:
    """Load every served (key, version) (schema.preload), then freeze the heap.
    Returns the number of versions loaded."""
    loaded = 0
    for handler in sorted(handlers.values(), key=lambda h: h.api_key):
        loaded += schema.preload(
            handler.api_key, range(handler.min_version, handler.max_version + 1)
        )
    gc.freeze()
    return loaded


def start_warmup(
    handlers: Mapping[int, ApiHandler], *, stopping: Callable[[], bool] = lambda: False
) -> threading.Thread:
    """Run `warm` in a daemon thread (logged when done, or if it fails)."""

    def run() -> None:
        started_ns = measure_ns()
        try:
            loaded = warm(handlers)
        except Exception:  # a warm-up failure only costs latency later: log it, carry on
            log.exception("warm-up of the message schemas failed")
            return
        if not stopping():
            log.info(
                "warm-up: %d API versions loaded in %.0f ms; %d objects frozen",
                loaded,
                (measure_ns() - started_ns) / 1e6,
                gc.get_freeze_count(),
            )

    thread = threading.Thread(target=run, name="shoal-warmup", daemon=True)
    thread.start()
    return thread
