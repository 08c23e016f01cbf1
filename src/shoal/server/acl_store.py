"""The durable ACL set: `acls.json` in the data directory, and the live authorizer.

Format: a JSON document `{"version": 1, "acls": [[type, name, pattern, principal, host,
operation, permission], ...]}` with Kafka's enum names, rewritten whole and atomically
(`log.fileio.write_atomic`: temporary file, fsync, rename, directory fsync) on each
change, as the dynamic configs and the group configs are. A whole-file snapshot rather
than an event log because ACL sets are small (at most `limits.ACLS_MAX`) and change
rarely (admin requests), so replay is just a load, there is nothing to compact, and a
crash leaves either the old or the new set: a torn temporary file is never read.

Invariant: the authorizer's set equals the file's. `create` and `delete` write the new
set first (off the event loop, through the broker's `DiskIO.write_atomic`) and change
the authorizer only once the write succeeded; a failed write raises OSError and leaves
both as they were. They are called in the broker's change lane (`DiskIO.changes`), one
at a time: an authorization check meanwhile sees the set before the change.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from shoal import limits
from shoal.config import BrokerConfig
from shoal.log.fileio import read_file
from shoal.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from shoal.security.authorizer import (
    AclBinding,
    AclBindingFilter,
    StandardAuthorizer,
    parse_super_users,
)
from shoal.server.disk_io import AtomicWrite

log = logging.getLogger(__name__)
ACLS_FILE = "acls.json"
_FORMAT_VERSION = 1


class AclFile:
    """`acls.json` in a data directory."""

    def __init__(self, data_dir: Path, *, write: AtomicWrite) -> None:
        self.path = data_dir / ACLS_FILE
        self._write = write

    def load(self) -> list[AclBinding]:
        """The persisted bindings ([] when none were ever written); raises OSError for
        a file that is not a valid ACL document."""
        data = read_file(self.path)
        if data is None:
            return []
        if len(data) > limits.ACL_FILE_BYTES_MAX:
            raise OSError(f"{self.path} is larger than {limits.ACL_FILE_BYTES_MAX} bytes")
        try:
            document = json.loads(data)
            if document["version"] != _FORMAT_VERSION:
                raise ValueError(f"unsupported version {document['version']!r}")
            acls = [_decode(row) for row in document["acls"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise OSError(f"{self.path} is unreadable: {exc}") from exc
        for acl in acls:
            problem = acl.problem()
            if problem is not None:
                raise OSError(f"{self.path} holds an invalid ACL {acl}: {problem}")
        return acls

    async def save(self, acls: Sequence[AclBinding]) -> None:
        """Replace the file with `acls`, durably and atomically; raises OSError."""
        document = {"version": _FORMAT_VERSION, "acls": [_encode(acl) for acl in sorted(acls)]}
        await self._write(self.path, (json.dumps(document, indent=0) + "\n").encode("utf-8"))


def _encode(acl: AclBinding) -> list[str]:
    return [
        acl.resource_type.name,
        acl.name,
        acl.pattern_type.name,
        acl.principal,
        acl.host,
        acl.operation.name,
        acl.permission.name,
    ]


def _decode(row: object) -> AclBinding:
    if not isinstance(row, list) or len(row) != 7 or not all(isinstance(v, str) for v in row):
        raise ValueError(f"malformed ACL row {row!r}")
    kind, name, pattern, principal, host, operation, permission = row
    return AclBinding(
        ResourceType[kind],
        name,
        PatternType[pattern],
        principal,
        host,
        AclOperation[operation],
        PermissionType[permission],
    )


@dataclass(frozen=True, slots=True)
class CreateOutcome:
    """What `create` did with each binding asked for, in order: None = created (or
    already present), otherwise the INVALID_REQUEST message."""

    problems: tuple[str | None, ...]


class AclStore:
    """The one writer of the ACL set: CreateAcls and DeleteAcls go through here."""

    def __init__(
        self, *, authorizer: StandardAuthorizer, file: AclFile, acls_max: int = limits.ACLS_MAX
    ) -> None:
        self.authorizer = authorizer
        self.file = file
        self.acls_max = acls_max

    @classmethod
    def open(
        cls, authorizer: StandardAuthorizer, data_dir: Path, *, write: AtomicWrite
    ) -> AclStore:
        """Load the persisted ACLs into `authorizer` (replay at start)."""
        file = AclFile(data_dir, write=write)
        acls = file.load()
        authorizer.add(acls)
        log.info("authorizer: %d ACLs loaded from %s", len(acls), file.path)
        return cls(authorizer=authorizer, file=file)

    async def create(self, acls: Sequence[AclBinding]) -> CreateOutcome:
        """Validate, persist and adopt `acls`; raises OSError (nothing changed) when
        the file cannot be written."""
        problems: list[str | None] = []
        new: list[AclBinding] = []
        seen = set(self.authorizer.acls())
        for acl in acls:
            problem = acl.problem()
            if problem is None and acl not in seen and len(seen) >= self.acls_max:
                problem = f"Too many ACLs: the broker keeps at most {self.acls_max}"
            problems.append(problem)
            if problem is None and acl not in seen:
                seen.add(acl)
                new.append(acl)
        if new:
            await self.file.save(sorted(seen))
            self.authorizer.add(new)
            log.info("ACLs created: %s", "; ".join(map(str, new)))
        return CreateOutcome(tuple(problems))

    async def delete(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove every binding some filter matches; per filter, the bindings it
        matched (each filter must be valid: `AclBindingFilter.problem()` is None).
        Raises OSError (nothing changed) when the file cannot be written."""
        current = self.authorizer.acls()
        matched = [[acl for acl in current if f.matches(acl)] for f in filters]
        doomed = {acl for acls in matched for acl in acls}
        if doomed:
            await self.file.save([acl for acl in current if acl not in doomed])
            self.authorizer.remove(doomed)
            log.info("ACLs deleted: %s", "; ".join(map(str, sorted(doomed))))
        return matched


def open_acl_store(config: BrokerConfig, *, write: AtomicWrite) -> AclStore | None:
    """The ACL store `authorizer.class.name` asks for (None when it is empty), loaded
    from the data directory, with `super.users` and `allow.everyone.if.no.acl.found`."""
    if not config.get_str("authorizer.class.name"):
        return None
    authorizer = StandardAuthorizer(
        super_users=parse_super_users(config.get_str("super.users")),
        allow_everyone_if_no_acl_found=config.get_bool("allow.everyone.if.no.acl.found"),
    )
    return AclStore.open(authorizer, config.data_dir, write=write)
