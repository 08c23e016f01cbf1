"""Producer ids for InitProducerId: each handed out once, never again, even across
crashes.

Owns: the file `producer-ids` in the data directory, holding "1\\n<id>\\n" (version,
then the first id not yet reserved). Ids are reserved in blocks of
`limits.PRODUCER_ID_BLOCK_SIZE`: the file is replaced atomically with the block's end
before any id of the block is handed out, and on open allocation restarts at the
stored value. A crash therefore skips the rest of a block but never repeats an id.
"""

from __future__ import annotations

from pathlib import Path

from shoal import limits
from shoal.log.api import LogError
from shoal.log.fileio import read_file, storage_errors, write_atomic
from shoal.protocol.errors import ErrorCode

PRODUCER_IDS_FILE = "producer-ids"
_VERSION = "1"
PRODUCER_ID_MAX = 2**63 - 1


class ProducerIdAllocator:
    def __init__(self, path: Path, *, next_id: int) -> None:
        self._path = path
        self._next_id = next_id
        self._reserved_end = next_id

    @classmethod
    def open(cls, data_dir: Path) -> ProducerIdAllocator:
        path = data_dir / PRODUCER_IDS_FILE
        data = read_file(path)
        if data is None:
            return cls(path, next_id=0)
        fields = data.decode("ascii", errors="replace").split()
        if len(fields) != 2 or fields[0] != _VERSION or not fields[1].isdigit():
            raise LogError(ErrorCode.kafka_storage_error, f"{path} is unreadable: {data[:64]!r}")
        return cls(path, next_id=int(fields[1]))

    def allocate(self) -> int:
        if self._next_id >= self._reserved_end:
            end = min(self._next_id + limits.PRODUCER_ID_BLOCK_SIZE, PRODUCER_ID_MAX)
            if end <= self._next_id:
                raise LogError(ErrorCode.kafka_storage_error, "producer ids are exhausted")
            with storage_errors(f"reserving producer ids in {self._path}"):
                write_atomic(self._path, f"{_VERSION}\n{end}\n".encode())
            self._reserved_end = end
        producer_id = self._next_id
        self._next_id += 1
        return producer_id
