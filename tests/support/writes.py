"""A store's durable write done in place, for unit tests of the stores' own logic
(the broker gives them `DiskIO.write_atomic`, which runs the same write in a worker)."""

from __future__ import annotations

from pathlib import Path

from shoal.log.fileio import write_atomic


async def write_in_place(path: Path, data: bytes) -> None:
    write_atomic(path, data)
