"""The one result type every coordinator shard's write operation returns.

A shard's operation changes nothing: it returns `CoordinatorResult(records, response,
effects)`. The runtime (coordinator/runtime.py) appends `records`, replays them into
the shard, performs `effects` through the shell that hosts the shard, and only then
hands `response` to whoever answers the client (docs/design/coordinators.md).

`effects` are plain values (requests to the world outside the shard: write markers,
initialise share state, wake a parked request); the runtime passes each to the
effect handler its host registered and never looks inside.

Not frozen: a frozen dataclass sets each field through `object.__setattr__`, several
times the cost, and one is built per operation. It is never changed once built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

RecordT = TypeVar("RecordT")
ResponseT = TypeVar("ResponseT")


@dataclass(slots=True)
class CoordinatorResult(Generic[RecordT, ResponseT]):
    """Records to write (then replay), the answer to give once they are, and the
    effects to perform after the replay."""

    records: tuple[RecordT, ...]
    response: ResponseT
    effects: tuple[object, ...] = ()


def decided(
    result: CoordinatorResult[RecordT, ResponseT],
) -> Callable[[object], CoordinatorResult[RecordT, ResponseT]]:
    """The `op` of a runtime write whose result was decided before the write (the
    host looked at it first: counted its records, performed a share-state call):
    `runtime.write(partition, decided(result))`."""
    return lambda _shard: result
