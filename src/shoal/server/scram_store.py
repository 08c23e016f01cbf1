"""The broker's SCRAM credentials: per user and mechanism, salted and iterated.

What is kept is Kafka's credential (salt, StoredKey, ServerKey, iterations), never a
password: the client salts the password (AlterUserScramCredentials carries the salted
password, from which the broker derives the two keys and forgets it).

Durable as one JSON file in the data directory, `scram-credentials.json`, replaced
atomically (temporary file, fsync, rename) on every change, as the dynamic broker
configs are (server/dynamic_config.py). A file rather than an event-sourced shard: the
set is small, changes rarely, is owned by this one node, and a whole-file replace is the
simplest thing that cannot be half-applied. The file is written off the event loop
(the broker's `DiskIO.write_atomic`), in the broker's change lane (`DiskIO.changes`);
the credentials change in memory, and the response is sent, after the file is written.
An authentication meanwhile uses the credentials before the change.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from shoal.security.scram import MECHANISMS, ScramCredential
from shoal.server.disk_io import AtomicWrite

log = logging.getLogger(__name__)
FILE_NAME = "scram-credentials.json"


@dataclass(frozen=True, slots=True)
class Upsertion:
    user: str
    mechanism: str
    credential: ScramCredential


@dataclass(frozen=True, slots=True)
class Deletion:
    user: str
    mechanism: str


class ScramStore:
    def __init__(self, data_dir: Path, *, write: AtomicWrite) -> None:
        self._path = data_dir / FILE_NAME
        self._write = write
        self._users: dict[str, dict[str, ScramCredential]] = _read(self._path)

    def credential(self, mechanism: str, user: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> list[str]:
        return sorted(self._users)

    def mechanisms(self, user: str) -> Mapping[str, ScramCredential]:
        return dict(self._users.get(user, {}))

    async def apply(
        self, *, upsertions: Iterable[Upsertion], deletions: Iterable[Deletion]
    ) -> None:
        """Apply validated changes and persist them (raises OSError if the write fails,
        leaving the previous credentials in force)."""
        users = {user: dict(creds) for user, creds in self._users.items()}
        for deletion in deletions:
            users.get(deletion.user, {}).pop(deletion.mechanism, None)
            if not users.get(deletion.user, True):
                del users[deletion.user]
        for upsertion in upsertions:
            users.setdefault(upsertion.user, {})[upsertion.mechanism] = upsertion.credential
        await self._write(self._path, _encode(users))
        self._users = users


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _encode(users: Mapping[str, Mapping[str, ScramCredential]]) -> bytes:
    document = {
        user: {
            mechanism: {
                "salt": _b64(c.salt),
                "stored_key": _b64(c.stored_key),
                "server_key": _b64(c.server_key),
                "iterations": c.iterations,
            }
            for mechanism, c in sorted(creds.items())
        }
        for user, creds in sorted(users.items())
    }
    return json.dumps({"version": 1, "users": document}, indent=1).encode("utf-8")


def _read(path: Path) -> dict[str, dict[str, ScramCredential]]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    users: dict[str, dict[str, ScramCredential]] = {}
    for user, creds in document["users"].items():
        users[user] = {
            mechanism: ScramCredential(
                salt=base64.b64decode(c["salt"]),
                stored_key=base64.b64decode(c["stored_key"]),
                server_key=base64.b64decode(c["server_key"]),
                iterations=int(c["iterations"]),
            )
            for mechanism, c in creds.items()
            if mechanism in MECHANISMS
        }
    log.info("loaded SCRAM credentials of %d users from %s", len(users), path)
    return users
