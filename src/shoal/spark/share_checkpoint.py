"""What the `shoal-share` source keeps with the query's checkpoint directory:

- which batches of the query Spark has committed (read), so that the source can ACCEPT
  a committed batch when the query stops before the next trigger would have
  (docs/design/spark-connector.md §3 rules 2 and 5);
- the member id of the source's share-group member (written once, read at every start),
  so that a restarted query rejoins its group as the member it was: a query killed
  without leaving (SIGKILL, a lost driver) leaves no ghost member holding a share of
  the partitions until its session times out (ShareGroupHeartbeat at epoch 0 with a
  known member id rejoins that member, KIP-932).

Spark gives a Python source no handle on the query's checkpoint, so the source takes
the same location as an option (`checkpointLocation`). Spark's layout there:

- `offsets/<batch id>`: the line `v1`, a metadata JSON line, then one line per source
  of the query, either its end offset JSON or `-`;
- `commits/<batch id>`: present once the batch is committed (Spark writes a temporary
  file and renames it, so a file with a numeric name is complete).

- `shoal-share/member-<group id, %-quoted>`: ours, the member id (Spark ignores
  files it does not know in the checkpoint);
- `shoal-share/replay-<group id, %-quoted>`: ours, the records the replay of a failed
  batch read when the source split it (share_bisect.py): the batch's offset JSON names
  all of its records, the replay only some, and a restart must not take the others
  for processed.

Only local checkpoints (a plain path or a `file:` URI) can be used here: the source
runner has no Hadoop file system. Plain file I/O; our two files are written to a
temporary file, then renamed, so they are read whole or not at all.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path
from typing import Final
from urllib.parse import quote, unquote, urlparse

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


MEMBER_DIR: Final = "shoal-share"
MEMBER_ID_CHARS_MAX: Final = 64
"""A member id file longer than this (or not one line of printable ASCII) is not
ours: a new member id replaces it."""


def new_member_id() -> str:
    """A member id as Kafka's clients make one (KIP-1082): a random UUID, 22 characters."""
    return uuid.uuid4().hex[:22]


def member_id_path(checkpoint: Path, group_id: str) -> Path:
    return checkpoint / MEMBER_DIR / f"member-{quote(group_id, safe='')}"


def kept_member_id(checkpoint: Path, group_id: str) -> str:
    """The member id this query's source used in `group_id` before, or a new one,
    written to the checkpoint first. OSError when the checkpoint cannot be written."""
    path = member_id_path(checkpoint, group_id)
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        text = ""
    except (UnicodeDecodeError, ValueError):
        log.warning("member id file %s is not ours; a new member id replaces it", path)
        text = ""
    if text and len(text) <= MEMBER_ID_CHARS_MAX and text.isprintable() and " " not in text:
        return text
    member_id = new_member_id()
    _write_atomically(path, member_id + "\n")
    return member_id


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


class ReplayLog:
    """The last split replay of the query's source in one group (see the module
    docstring): `save` before the replay is read, `load` at a restart."""

    def __init__(self, checkpoint: Path, group_id: str) -> None:
        self.path = checkpoint / MEMBER_DIR / f"replay-{quote(group_id, safe='')}"

    def save(self, replay: ShareOffset) -> None:
        """OSError when the checkpoint cannot be written."""
        _write_atomically(self.path, json.dumps(replay.to_json()) + "\n")

    def load(self) -> ShareOffset | None:
        try:
            return ShareOffset.from_json(json.loads(self.path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            log.warning("replay file %s unreadable; ignored", self.path, exc_info=True)
            return None


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
