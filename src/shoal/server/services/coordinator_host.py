"""What every coordinator shell does the same way around its coordinator runtime.

The runtime (coordinator/runtime.py) is sans-I/O; hosting it in the broker takes
three pieces of I/O, the same for the transaction and share coordinators (and any
other runtime):

- `LogLoader`: the runtime's loader over the internal topic's partition logs
  (`read_log`), counting what it replays for the start-up log line; `flush_first`
  fsyncs a partition before it is read (`PartitionLog.flush_loaded`: what a crash
  left in the page cache only is made durable before the coordinator acts on it);
- `load_all`: every partition loaded, with one log line;
- `RuntimeTimer`: the runtime's timed writes as one source of the broker's timer
  driver (server/services/timers.py): `next_deadline`/`fire`, then the log deletion the
  maintenance pass reported (`prune_log`; whole segments are removed by
  `remove_paths`, the broker's disk worker threads). `runtime` is a callable so a
  topic opened on first use (`__transaction_state`) arms nothing before it exists.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from shoal.clock import Clock
from shoal.coordinator.log_sink import Decode, read_log
from shoal.coordinator.pruning import RemovePaths, prune_log
from shoal.coordinator.runtime import CoordinatorRuntime
from shoal.log.partition import PartitionLog

log = logging.getLogger(__name__)

R = TypeVar("R")


class LogLoader(Generic[R]):
    """A coordinator runtime's loader over partition logs (module docstring)."""

    def __init__(
        self,
        partitions: Sequence[PartitionLog],
        decode: Decode[R],
        *,
        buffer_bytes: int,
        flush_first: bool = False,
    ) -> None:
        self._partitions = partitions
        self._decode = decode
        self._buffer_bytes = buffer_bytes
        self._flush_first = flush_first
        self.records = 0
        """Records replayed through this loader so far."""

    def __call__(self, index: int) -> Iterator[tuple[int, R]]:
        partition = self._partitions[index]
        if self._flush_first:
            partition.flush_loaded()
        for pair in read_log(partition, self._decode, buffer_bytes=self._buffer_bytes):
            self.records += 1
            yield pair


def load_all(
    runtime: CoordinatorRuntime[Any, Any], loader: LogLoader[Any], *, clock: Clock, what: str
) -> None:
    """Load every partition of `runtime` through `loader` (which it was built with)."""
    started = clock.monotonic_ms()
    before = loader.records
    for index in range(runtime.partitions):
        runtime.load_partition(index)
    log.info(
        "%s loaded %d records from %d partitions of %s in %d ms",
        what,
        loader.records - before,
        runtime.partitions,
        runtime.name,
        clock.monotonic_ms() - started,
    )


def prune_logs(
    partitions: Sequence[PartitionLog], offsets: dict[int, int], *, remove_paths: RemovePaths
) -> int:
    """Delete each partition's records below its offset; how many log starts moved."""
    return sum(
        prune_log(partitions[index], offset, remove_paths=remove_paths)
        for index, offset in sorted(offsets.items())
    )


class RuntimeTimer:
    """A runtime's timed writes as one timer source (module docstring)."""

    def __init__(
        self,
        name: str,
        *,
        runtime: Callable[[], CoordinatorRuntime[Any, Any] | None],
        partitions: Callable[[], Sequence[PartitionLog]],
        remove_paths: RemovePaths,
    ) -> None:
        self._name = name
        self._runtime = runtime
        self._partitions = partitions
        self._remove_paths = remove_paths

    @property
    def name(self) -> str:
        return self._name

    def next_deadline_ms(self, now_ms: int) -> int | None:
        runtime = self._runtime()
        return None if runtime is None else runtime.next_deadline(now_ms)

    def fire(self, now_ms: int) -> None:
        runtime = self._runtime()
        if runtime is None:
            return
        fired = runtime.fire(now_ms)
        if fired.prune:
            moved = prune_logs(self._partitions(), fired.prune, remove_paths=self._remove_paths)
            if moved:
                log.info("%s: %d partitions pruned", runtime.name, moved)
