"""The simulated disk under the logs: what a crash or a power loss leaves in the files.

Owns the page-cache model. While a run is `installed`, every `os.fsync` of a regular
file (the log package fsyncs only through `os.fsync`: log/fileio.py) records the
file's size as durable. A process crash loses nothing the kernel accepted (the page
cache survives it); a **power loss** loses, per file, any part of what was written
after its last fsync: the whole unflushed tail, a cut inside it, or none of it (each
file drawn on its own, so one log may keep a write another lost). The model covers
appended bytes, the log's own writing pattern (segments are appended; small files are
replaced whole by `write_atomic`, whose temp file is fsynced before the rename); a
write in place below a file's durable size, and directory entries, are taken as
durable (the log fsyncs a directory after creating a segment in it; an internal
topic partition's, made at start, at its first flush). A new partition's
partition.metadata is written without an fsync, so a power loss may cut it: opening
rewrites it.

Also owns tearing: cutting the tail of a segment file, the last write of a crashed
process half-done. No randomness here beyond the generator it is handed.
"""

from __future__ import annotations

import os
import random
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

FileKey = tuple[int, int]


class Disk:
    """Durable sizes of the files under `root` (module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._durable: dict[FileKey, int] = {}

    def _files(self) -> Iterator[tuple[Path, os.stat_result]]:
        for path in sorted(self.root.rglob("*")):
            try:
                info = path.stat()
            except FileNotFoundError:
                continue
            if stat.S_ISREG(info.st_mode):
                yield path, info

    def settle(self) -> None:
        """Everything on disk now is durable (after a power loss, or at the start)."""
        self._durable = {(i.st_dev, i.st_ino): i.st_size for _, i in self._files()}

    def unflushed_bytes(self) -> int:
        return sum(
            max(0, info.st_size - self._durable.get((info.st_dev, info.st_ino), 0))
            for _, info in self._files()
        )

    @contextmanager
    def installed(self) -> Iterator[None]:
        """Track fsyncs while the block runs (and restore `os.fsync` after)."""
        real = os.fsync

        def fsync(fd: Any) -> None:  # an int or an object with fileno(), as os.fsync
            # The model is the disk: the temporary directory's own durability does
            # not matter, so the real fsync (milliseconds each) is not made.
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode):
                self._durable[(info.st_dev, info.st_ino)] = info.st_size

        os.fsync = fsync
        try:
            yield
        finally:
            os.fsync = real

    def power_loss(self, rng: random.Random) -> list[str]:
        """Drop unflushed bytes, file by file (call with every file closed). Returns
        what was lost, for the schedule."""
        lost: list[str] = []
        for path, info in self._files():
            durable = min(info.st_size, self._durable.get((info.st_dev, info.st_ino), 0))
            if info.st_size == durable:
                continue
            fate = rng.random()
            if fate < 0.4:
                keep = durable
            elif fate < 0.7:
                keep = rng.randint(durable, info.st_size - 1)
            else:
                continue  # the kernel had written it back anyway
            with path.open("r+b") as file:
                file.truncate(keep)
            lost.append(f"{path.relative_to(self.root)}: {info.st_size - keep} bytes")
        self.settle()
        return lost


def tear_tail(directory: Path, last_write_bytes: int, cut_bytes: int) -> str | None:
    """Cut 1 .. `last_write_bytes` - 1 bytes off the newest segment in `directory`
    (the last write, half-done); a description, or None if there is nothing to tear."""
    if last_write_bytes <= 1:
        return None
    segments = sorted(directory.glob("*.log"))
    if not segments:
        return None
    path = segments[-1]
    size = path.stat().st_size
    cut = 1 + cut_bytes % (last_write_bytes - 1)
    if cut > size:
        return None
    with path.open("r+b") as file:
        file.truncate(size - cut)
    return f"tore {cut} of the last {last_write_bytes} bytes of {directory.name}/{path.name}"
