"""File primitives of the log package: durable small files, exact reads and writes.

Owns:
- the one way the package replaces a small file so that a crash leaves either the old
  or the new content: write a temp file, fsync it, rename it over, fsync the directory
  (`write_atomic`);
- positional whole reads and vectored writes (`pread_exact`, `pwritev_all`), the
  latter never copying the buffers it is given;
- turning an `OSError` into `LogError(ErrorCode.kafka_storage_error)` with context
  (`storage_errors`);
- removing files and directory trees set aside for deletion (`remove_paths`): plain
  unlinks by name, no descriptor shared with anyone, so safe on any thread.

Every fsync of the package goes through `os.fsync` at call time, so a test may count
or stub them by monkeypatching `os.fsync`.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from shoal.log.api import LogError
from shoal.protocol.errors import ErrorCode

logger = logging.getLogger(__name__)

TEMP_SUFFIX = ".tmp"
DELETED_SUFFIX = ".deleted"
"""Suffix of a segment file set aside for deletion; recovery removes leftovers."""


def _iov_max() -> int:
    """Buffers one vectored write may take (POSIX guarantees at least 16)."""
    try:
        value = os.sysconf("SC_IOV_MAX")
    except (ValueError, OSError, AttributeError):
        return 16
    return 16 if value < 16 else min(value, 1024)


_IOV_MAX = _iov_max()

Buffer = bytes | bytearray | memoryview


@contextlib.contextmanager
def storage_errors(context: str) -> Iterator[None]:
    """Re-raise an OSError inside the block as KAFKA_STORAGE_ERROR naming `context`."""
    try:
        yield
    except OSError as exc:
        raise LogError(ErrorCode.kafka_storage_error, f"{context}: {exc}") from exc


def file_name(offset: int, suffix: str) -> str:
    """Kafka's file naming: the offset as 20 digits, then the suffix."""
    return f"{offset:020d}{suffix}"


def parse_file_name(name: str, suffix: str) -> int | None:
    """The offset in a Kafka-style file name with `suffix`, or None if it is not one."""
    stem = name.removesuffix(suffix)
    if stem == name or len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


def fsync_directory(directory: Path) -> None:
    """Make the directory's entries (created, renamed, removed files) durable."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves the old or the new content."""
    temp = path.with_name(path.name + TEMP_SUFFIX)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        pwritev_all(fd, [data], 0)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    fsync_directory(path.parent)


def write_file(path: Path, data: bytes, *, sync: bool) -> None:
    """Overwrite `path` in place with `data` (fsynced when `sync`). Not atomic: for
    files whose readers check them and can rebuild them (the indexes)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        pwritev_all(fd, [data], 0)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def read_file(path: Path) -> bytes | None:
    """The whole content of `path`, or None if it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def pread_exact(fd: int, size: int, position: int) -> bytes:
    """`size` bytes at `position`, or fewer only if the file ends first."""
    data = os.pread(fd, size, position)
    if len(data) == size or not data:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, position + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def pwritev_all(fd: int, buffers: Sequence[Buffer], position: int) -> int:
    """Write all `buffers` back to back at `position` with vectored writes (the
    buffers are handed to the kernel as they are, never joined). Returns the bytes
    written. A short write is continued; a write of nothing raises OSError."""
    expected = sum(map(len, buffers))
    written = 0
    if expected and len(buffers) <= _IOV_MAX:
        written = os.pwritev(fd, buffers, position)
        if written == expected:  # the usual case: one call wrote everything
            return written
    pending: list[Buffer] = [b for b in buffers if len(b)]
    index = 0
    total = 0
    while True:
        position += written
        total += written
        while written > 0:
            length = len(pending[index])
            if written >= length:
                written -= length
                index += 1
            else:
                pending[index] = memoryview(pending[index])[written:]
                written = 0
        if index >= len(pending):
            return total
        written = os.pwritev(fd, pending[index : index + _IOV_MAX], position)
        if written <= 0:
            raise OSError(errno.EIO, "write made no progress")


def remove_paths(paths: Iterable[Path]) -> None:
    """Remove files and directory trees set aside for deletion. A failure is logged
    and skipped: the leftover keeps its deletion name, and opening the data directory
    removes it again."""
    for path in paths:
        try:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        except OSError as exc:
            logger.warning("could not remove %s (removed again on next start): %s", path, exc)


def remove_if_exists(path: Path) -> bool:
    """Unlink `path`; True if it existed."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True
