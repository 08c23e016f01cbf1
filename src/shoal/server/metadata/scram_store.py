"""The broker's SCRAM credentials: per user and mechanism, salted and iterated.

What is kept is Kafka's credential (salt, StoredKey, ServerKey, iterations), never a
password: the client salts the password (AlterUserScramCredentials carries the salted
password, from which the broker derives the two keys and forgets it).

The credentials are part of the cluster metadata (server/metadata/metadata_log.py), as
UserScramCredentialRecords: `apply` writes the validated changes through the metadata
shard (`alter_scram`); they are fsynced before they are replayed and before the
response is sent. It runs in the broker's change lane (`DiskIO.changes`); an
authentication meanwhile uses the credentials before the change. Lookups read the
metadata image.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from shoal.metadata.shard import ScramDeletion, ScramUpsertion
from shoal.security.scram import ScramCredential
from shoal.server.metadata.metadata_log import MetadataLog

log = logging.getLogger(__name__)

Upsertion = ScramUpsertion
"""A credential to set (the metadata shard's word)."""
Deletion = ScramDeletion
"""A credential to delete (the metadata shard's word)."""


class ScramStore:
    def __init__(self, metadata: MetadataLog) -> None:
        self._metadata = metadata
        users = metadata.image.scram
        if users:
            log.info("loaded SCRAM credentials of %d users from the metadata log", len(users))

    def credential(self, mechanism: str, user: str) -> ScramCredential | None:
        return self._metadata.image.scram.get(user, {}).get(mechanism)

    def users(self) -> list[str]:
        return sorted(self._metadata.image.scram)

    def mechanisms(self, user: str) -> Mapping[str, ScramCredential]:
        return dict(self._metadata.image.scram.get(user, {}))

    async def apply(
        self, *, upsertions: Iterable[Upsertion], deletions: Iterable[Deletion]
    ) -> None:
        """Apply validated changes and persist them (raises OSError if the write fails,
        leaving the previous credentials in force)."""
        shard = self._metadata.shard
        await self._metadata.write(shard.alter_scram(upsertions=upsertions, deletions=deletions))
