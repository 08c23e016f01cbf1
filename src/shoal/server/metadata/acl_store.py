"""The live authorizer over the ACL set of the metadata log.

The ACL set is part of the cluster metadata (server/metadata/metadata_log.py): CreateAcls and
DeleteAcls decide on the metadata shard (`create_acls`, `delete_acls`), whose
AccessControlEntry records are fsynced before they are replayed. `AclStore` keeps the
`StandardAuthorizer`'s index equal to the image's set: it is loaded from the image at
start and told each change after the write succeeded; a failed write raises OSError
(`MetadataWriteError`) and leaves both as they were. Changes run in the broker's
change lane (`DiskIO.changes`), one at a time: an authorization check meanwhile sees
the set before the change.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from shoal import limits
from shoal.config import BrokerConfig, broker_keys
from shoal.security.authorizer import (
    AclBinding,
    AclBindingFilter,
    StandardAuthorizer,
    parse_super_users,
)
from shoal.server.metadata.metadata_log import MetadataLog

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CreateOutcome:
    """What `create` did with each binding asked for, in order: None = created (or
    already present), otherwise the INVALID_REQUEST message."""

    problems: tuple[str | None, ...]


class AclStore:
    """The one writer of the ACL set: CreateAcls and DeleteAcls go through here."""

    def __init__(
        self,
        *,
        authorizer: StandardAuthorizer,
        metadata: MetadataLog,
        acls_max: int = limits.ACLS_MAX,
    ) -> None:
        self.authorizer = authorizer
        self.metadata = metadata
        self.acls_max = acls_max

    @classmethod
    def open(cls, authorizer: StandardAuthorizer, metadata: MetadataLog) -> AclStore:
        """Load the metadata image's ACLs into `authorizer`."""
        acls = metadata.image.acls
        authorizer.add(acls)
        log.info("authorizer: %d ACLs loaded from the metadata log", len(acls))
        return cls(authorizer=authorizer, metadata=metadata)

    async def create(self, acls: Sequence[AclBinding]) -> CreateOutcome:
        """Validate, persist and adopt `acls`; raises OSError (nothing changed) when
        the metadata log cannot take them."""
        before = self.metadata.image.acls
        result = self.metadata.shard.create_acls(acls, acls_max=self.acls_max)
        problems = await self.metadata.write(result)
        new = self.metadata.image.acls - before
        if new:
            self.authorizer.add(new)
            log.info("ACLs created: %s", "; ".join(map(str, sorted(new))))
        return CreateOutcome(problems)

    async def delete(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove every binding some filter matches; per filter, the bindings it
        matched (each filter must be valid: `AclBindingFilter.problem()` is None).
        Raises OSError (nothing changed) when the metadata log cannot take it."""
        before = self.metadata.image.acls
        matched = await self.metadata.write(self.metadata.shard.delete_acls(filters))
        doomed = before - self.metadata.image.acls
        if doomed:
            self.authorizer.remove(doomed)
            log.info("ACLs deleted: %s", "; ".join(map(str, sorted(doomed))))
        return matched


def open_acl_store(config: BrokerConfig, metadata: MetadataLog) -> AclStore | None:
    """The ACL store `authorizer.class.name` asks for (None when it is empty), loaded
    from the metadata log, with `super.users` and `allow.everyone.if.no.acl.found`."""
    if not config.get(broker_keys.AUTHORIZER_CLASS_NAME):
        return None
    authorizer = StandardAuthorizer(
        super_users=parse_super_users(config.get(broker_keys.SUPER_USERS)),
        allow_everyone_if_no_acl_found=config.get(broker_keys.ALLOW_EVERYONE_IF_NO_ACL_FOUND),
    )
    return AclStore.open(authorizer, metadata)
