"""Swapping cleaned segments into a partition directory, crash-safely, and the cleaner
checkpoint.

Owns: the file steps that replace source segments with the `.cleaned` segments a
clean wrote (Kafka's UnifiedLog.replaceSegments), what opening a directory does with
whatever a crash left of them (`complete_swaps`, run first by recovery), and the
per-partition cleaner checkpoint file. docs/design/compaction.md, "The swap", walks through
every step and every leftover.

The steps of one group (the sources, oldest first, and their outputs):
1. every output's index files, then its `.log`, are renamed `.cleaned` -> `.swap`,
   outputs last to first; the first output's `.log.swap` is the decision: from the
   moment it exists the swap is carried through, at once or by the next open;
2. the sources are retired (renamed `.deleted`, as retention does);
3. every `.swap` file is renamed to its final name, indexes before the `.log`.
The directory is fsynced after each step. Leftovers at open: `.cleaned` files are
removed (the swap was not decided); for each `<base>.log.swap`, the live segments
with a base offset in [base, its next offset) (at least `base` itself) are retired,
then its `.swap` files take their final names; index `.swap` files without their
`.log.swap` are removed.

Outputs are renamed last to first so that the first output's `.log.swap` is never
seen without the others': a later output may start inside a source whose base lies
in the first output's range, and that source is retired only when its records past
the first output are safe in the later one.

File `cleaner-offset.checkpoint`: "1\\n<offset>\\n" (version, first dirty offset),
written atomically after a swap.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from shoal.log.fileio import (
    fsync_directory,
    parse_file_name,
    read_file,
    remove_if_exists,
    write_atomic,
)
from shoal.log.segment import LOG_SUFFIX, Segment

logger = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
CLEANER_CHECKPOINT_FILE = "cleaner-offset.checkpoint"
_CHECKPOINT_VERSION = "1"

Step = Callable[[str], None]
"""Told the name of each durable step as it completes (tests stop the process there)."""


def read_cleaner_checkpoint(directory: Path) -> int | None:
    """The first dirty offset the last clean recorded, or None."""
    data = read_file(directory / CLEANER_CHECKPOINT_FILE)
    if data is None:
        return None
    lines = data.decode("ascii", errors="replace").split()
    if len(lines) == 2 and lines[0] == _CHECKPOINT_VERSION and lines[1].isdigit():
        return int(lines[1])
    logger.warning("ignoring unreadable %s", directory / CLEANER_CHECKPOINT_FILE)
    return None


def write_cleaner_checkpoint(directory: Path, offset: int) -> None:
    write_atomic(directory / CLEANER_CHECKPOINT_FILE, f"{_CHECKPOINT_VERSION}\n{offset}\n".encode())


def _rename_suffix(segment: Segment, suffix: str, step: Step | None = None) -> None:
    """Rename the segment's existing files to `suffix`, indexes first, `.log` last."""
    old = segment.file_paths()
    segment.suffix = suffix
    new = segment.file_paths()
    for i in (1, 2, 3, 0):
        try:
            old[i].rename(new[i])
        except FileNotFoundError:
            if i == 0:
                raise
            continue
        if step is not None:
            step(f"renamed {old[i].name} to {new[i].name}")


def swap_group(
    directory: Path, sources: list[Segment], outputs: list[Segment], step: Step | None
) -> list[Path]:
    """Replace `sources` by `outputs` (closed `.cleaned` segments) on disk; returns
    the retired sources' paths, to remove."""
    for output in reversed(outputs):
        _rename_suffix(output, SWAP_SUFFIX, step)
    fsync_directory(directory)
    if step is not None:
        step("swap decided")
    retired: list[Path] = []
    for source in sources:
        retired += source.retire()
        if step is not None:
            step(f"retired {source.base_offset}")
    fsync_directory(directory)
    for output in outputs:
        _rename_suffix(output, "", step)
    fsync_directory(directory)
    return retired


def remove_cleaned(outputs: list[Segment]) -> None:
    """Remove the files of outputs that will not be swapped in."""
    for output in outputs:
        output.close()
        for path in output.file_paths():
            remove_if_exists(path)


def complete_swaps(directory: Path) -> None:
    """Finish or undo what a crash left of a swap (see the module docstring); run
    before the segments of `directory` are opened."""
    names = [p.name for p in directory.iterdir()]
    changed = False
    for name in names:
        if name.endswith(CLEANED_SUFFIX):
            remove_if_exists(directory / name)
            changed = True
    swaps = sorted(
        base
        for name in names
        if (base := parse_file_name(name.removesuffix(SWAP_SUFFIX), LOG_SUFFIX)) is not None
        and name.endswith(SWAP_SUFFIX)
    )
    live = sorted(base for name in names if (base := parse_file_name(name, LOG_SUFFIX)) is not None)
    for base in swaps:
        swapped = Segment.open_existing(directory, base, suffix=SWAP_SUFFIX)
        bad = swapped.scan(verify_crc=False, index_interval_bytes=4096)
        swapped.close()
        if bad is not None:
            logger.warning("%s has an unreadable batch at %d", swapped.log_path, bad)
        end = max(swapped.next_offset, base + 1)
        for old in [b for b in live if base <= b < end]:
            logger.info("completing the swap of %s: retiring segment %d", swapped.log_path, old)
            for path in Segment.open_existing(directory, old).retire():
                remove_if_exists(path)
            live.remove(old)
        _rename_suffix(swapped, "")
        live.append(base)
        live.sort()
        changed = True
    for name in names:
        if name.endswith(SWAP_SUFFIX) and (directory / name).exists():
            logger.info("removing %s: its swap was never decided", directory / name)
            remove_if_exists(directory / name)
            changed = True
    if changed:
        fsync_directory(directory)
