"""Which batches of a streaming query Spark has committed, read from the query's
checkpoint directory, so that the `shoal-share` source can ACCEPT a committed batch
when the query stops before the next trigger would have (spark.md §3 rules 2 and 5).

Spark gives a Python source no handle on the query's checkpoint, so the source takes
the same location as an option (`checkpointLocation`). Spark's layout there:

- `offsets/<batch id>`: the line `v1`, a metadata JSON line, then one line per source
  of the query, either its end offset JSON or `-`;
- `commits/<batch id>`: present once the batch is committed (Spark writes a temporary
  file and renames it, so a file with a numeric name is complete).

Only local checkpoints (a plain path or a `file:` URI) can be read here: the source
runner has no Hadoop file system. Reading is plain file I/O; nothing is written.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlparse

from shoal.spark.share_offsets import ShareOffset

log = logging.getLogger(__name__)

COMMITTED_BATCHES_READ_MAX: Final = 100
"""Committed batches read back, newest first: Spark's default
`spark.sql.streaming.minBatchesToRetain`. The driver only ever holds the one or two
newest batches, so older ones never matter."""


def local_checkpoint(value: str) -> Path:
    """The directory a `checkpointLocation` value names; ValueError unless it is local."""
    text = value.strip()
    if not text:
        raise ValueError("must not be empty")
    parsed = urlparse(text)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ValueError(f"names another host ({parsed.netloc}); give a local directory")
        return Path(unquote(parsed.path)).absolute()
    if parsed.scheme:
        raise ValueError(
            f"must be a local directory (a path or a file: URI), not a {parsed.scheme}: URI"
        )
    return Path(text).absolute()


def committed_offsets(
    checkpoint: Path, *, batches_max: int = COMMITTED_BATCHES_READ_MAX
) -> list[ShareOffset]:
    """The `shoal-share` end offsets of the newest committed batches, newest first.

    Lines of other sources (and batches whose offsets file is gone) are skipped; a
    missing checkpoint (the query never committed a batch) reads as none. OSError for
    anything else the file system refuses."""
    commits = checkpoint / "commits"
    try:
        names = os.listdir(commits)
    except FileNotFoundError:
        return []
    batch_ids = sorted((int(name) for name in names if name.isdigit()), reverse=True)
    found: list[ShareOffset] = []
    for batch_id in batch_ids[:batches_max]:
        try:
            text = (checkpoint / "offsets" / str(batch_id)).read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        found.extend(_share_offsets(text))
    return found


def _share_offsets(text: str) -> list[ShareOffset]:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "v1":
        log.warning("unexpected offsets file format (first line %r); skipped", lines[:1])
        return []
    offsets = []
    for line in lines[2:]:
        try:
            offsets.append(ShareOffset.from_json(json.loads(line)))
        except ValueError:  # another source's offset, or "-" (OffsetFormatError too)
            continue
    return offsets
