"""Kafka's StandardAuthorizer: ACL bindings, their filters, and the decision.

Sans-I/O: the ACL set lives in memory; `server/metadata/acl_store.py` keeps it durable and calls
`add` / `remove` only after a change is on disk.

A binding is (resource type, name, pattern type, principal, host, operation,
permission). `authorize` follows Kafka's StandardAuthorizerData:

1. A principal named in `super.users` (exact `Type:name` text) is always allowed.
2. The ACLs whose resource pattern matches the action's resource are found: LITERAL
   bindings with the exact name or the wildcard `*`, PREFIXED bindings whose name is a
   prefix of the resource name. Of those, a binding applies when its principal is the
   caller's or `User:*` and its host is the caller's address or `*`.
3. An applying DENY of the operation or of ALL denies (DENY wins over any ALLOW). An
   applying ALLOW of the operation, of ALL, or of an operation implying it (DESCRIBE is
   implied by READ, WRITE, DELETE and ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS) allows.
   A DENY never implies: DENY READ does not deny DESCRIBE.
4. Otherwise: when no ACL at all matched the resource (whatever its principal, host or
   operation) the answer is `allow.everyone.if.no.acl.found` (default false); when some
   did, denied.

`authorize_any` is Kafka's `Authorizer.authorizeByResourceType` (the interface's
default method, which StandardAuthorizer keeps); see its docstring.

Index (no per-call scan of the whole set): LITERAL bindings by (type, name), PREFIXED
bindings by (type, prefix) with, per type, the sorted distinct prefix lengths, so a
lookup costs one dict probe per distinct prefix length; and bindings by (type,
principal) for `authorize_any`.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from shoal.security.acl import (
    CLUSTER_NAME,
    WILDCARD,
    AclOperation,
    Action,
    KafkaPrincipal,
    PatternType,
    PermissionType,
    ResourceType,
)

WILDCARD_PRINCIPAL = "User:*"
"""An ACL principal that matches every principal (of type User, as in Kafka)."""
_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset(
        {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    ),
}
"""For an operation asked for: the ALLOWed operations that grant it (besides ALL)."""
AUTHORIZE_ANY_CACHE_MAX = 10_000
"""`authorize_any` answers remembered at most (per principal, host, operation and
resource type, until the ACL set changes); when full the memory is emptied and refills."""
_AUTHORIZE_ANY_PROBE = "hardcode"
"""The literal resource name Kafka's authorizeByResourceType probes first (so super
users and allow-everyone are honoured before the scan)."""


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ACL: who (principal, host) may or may not (permission) do what (operation)
    on which resources (type, name, pattern)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: PermissionType

    def __str__(self) -> str:
        """As Kafka prints an AclBinding."""
        return (
            f"(pattern=ResourcePattern(resourceType={self.resource_type.name}, "
            f"name={self.name}, patternType={self.pattern_type.name}), "
            f"entry=(principal={self.principal}, host={self.host}, "
            f"operation={self.operation.name}, permissionType={self.permission.name}))"
        )

    def unbuildable(self) -> bool:
        """A binding Kafka cannot even build (its ResourcePattern refuses the ANY
        resource type and the ANY / MATCH pattern types, its AccessControlEntry the ANY
        operation and permission): the whole CreateAcls fails (UNKNOWN_SERVER_ERROR)."""
        return (
            self.resource_type is ResourceType.ANY
            or self.pattern_type in (PatternType.ANY, PatternType.MATCH)
            or self.operation is AclOperation.ANY
            or self.permission is PermissionType.ANY
        )

    def problem(self) -> str | None:
        """Why Kafka refuses to create this binding (INVALID_REQUEST), or None: first
        the broker's checks (AclApis: the CLUSTER name, an empty name), then the
        controller's (AclControlManager.validateNewAcl: codes it does not know, ANY
        and MATCH), then the principal's `Type:` (SecurityUtils.parseKafkaPrincipal;
        an empty type or name is accepted)."""
        if self.resource_type is ResourceType.CLUSTER and self.name != CLUSTER_NAME:
            return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        if not self.name:
            return "Invalid empty resource name"
        if self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
            return f"Invalid resourceType {self.resource_type.name}"
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"Invalid patternType {self.pattern_type.name}"
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            return f"Invalid operation {self.operation.name}"
        if self.permission not in (PermissionType.ALLOW, PermissionType.DENY):
            return f"Invalid permissionType {self.permission.name}"
        if ":" not in self.principal:
            return (
                f"Could not parse principal from `{self.principal}` (no colon is present "
                "separating the principal type from the principal name)"
            )
        return None


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Kafka's AclBindingFilter: which bindings DescribeAcls lists and DeleteAcls removes.

    None strings and ANY enums match everything. Pattern type: ANY matches both
    patterns with the exact name; LITERAL / PREFIXED match that pattern type with the
    exact name; MATCH matches every binding that would apply to the named resource
    (LITERAL exact or `*`, PREFIXED prefixes of the name)."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: PermissionType = PermissionType.ANY

    def problem(self) -> str | None:
        """Why Kafka refuses the filter (an UNKNOWN field), or None."""
        if self.pattern_type is PatternType.UNKNOWN or self.resource_type is ResourceType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation is AclOperation.UNKNOWN or self.permission is PermissionType.UNKNOWN:
            return "Unknown entryFilter."
        return None

    def matches(self, acl: AclBinding) -> bool:
        return self._matches_pattern(acl) and self._matches_entry(acl)

    def _matches_pattern(self, acl: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH) and (
            self.pattern_type != acl.pattern_type
        ):
            return False
        if self.name is None:
            return True
        if self.pattern_type is PatternType.ANY or self.pattern_type == acl.pattern_type:
            return self.name == acl.name
        if acl.pattern_type is PatternType.LITERAL:
            return acl.name in (self.name, WILDCARD)
        return self.name.startswith(acl.name)

    def _matches_entry(self, acl: AclBinding) -> bool:
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission is PermissionType.ANY or self.permission == acl.permission


MATCH_ALL = AclBindingFilter()
"""The filter every binding matches."""


def parse_super_users(text: str | None) -> frozenset[str]:
    """`super.users`: principals separated by semicolons (`User:admin;User:ops`)."""
    if not text:
        return frozenset()
    return frozenset(part.strip() for part in text.split(";") if part.strip())


class StandardAuthorizer:
    """The `Authorizer` of security/acl.py over an in-memory ACL set that changes in
    place (`add`, `remove`), so `Services` can hold it frozen."""

    def __init__(
        self,
        *,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
        acls: Iterable[AclBinding] = (),
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._all: set[AclBinding] = set()
        self._literal: dict[tuple[ResourceType, str], set[AclBinding]] = defaultdict(set)
        self._prefixed: dict[tuple[ResourceType, str], set[AclBinding]] = defaultdict(set)
        self._prefix_lengths: dict[ResourceType, list[int]] = defaultdict(list)
        """Per type, the sorted distinct lengths of its PREFIXED names."""
        self._prefix_names: dict[tuple[ResourceType, int], int] = defaultdict(int)
        """Per (type, length), how many distinct PREFIXED names have that length."""
        self._by_principal: dict[tuple[ResourceType, str], set[AclBinding]] = defaultdict(set)
        self._any_answers: dict[tuple[str, str, AclOperation, ResourceType], bool] = {}
        """authorize_any's answers since the set last changed (its scan is per principal)."""
        self.add(acls)

    # ---- the ACL set
    def __len__(self) -> int:
        return len(self._all)

    def __contains__(self, acl: object) -> bool:
        return acl in self._all

    def acls(self, acl_filter: AclBindingFilter = MATCH_ALL) -> list[AclBinding]:
        """The bindings `acl_filter` matches, sorted."""
        if acl_filter is MATCH_ALL:
            return sorted(self._all)
        return sorted(acl for acl in self._all if acl_filter.matches(acl))

    def add(self, acls: Iterable[AclBinding]) -> None:
        """Add bindings (already durable, already valid); present ones are kept once."""
        for acl in acls:
            assert acl.problem() is None, f"invalid ACL {acl}: {acl.problem()}"
            if acl in self._all:
                continue
            self._any_answers.clear()
            self._all.add(acl)
            self._by_principal[acl.resource_type, acl.principal].add(acl)
            key = (acl.resource_type, acl.name)
            if acl.pattern_type is PatternType.LITERAL:
                self._literal[key].add(acl)
                continue
            bucket = self._prefixed[key]
            if not bucket:
                self._prefix_names[acl.resource_type, len(acl.name)] += 1
                if self._prefix_names[acl.resource_type, len(acl.name)] == 1:
                    bisect.insort(self._prefix_lengths[acl.resource_type], len(acl.name))
            bucket.add(acl)

    def remove(self, acls: Iterable[AclBinding]) -> None:
        """Remove bindings (the removal is already durable); absent ones are ignored."""
        for acl in acls:
            if acl not in self._all:
                continue
            self._any_answers.clear()
            self._all.discard(acl)
            _discard(self._by_principal, (acl.resource_type, acl.principal), acl)
            key = (acl.resource_type, acl.name)
            if acl.pattern_type is PatternType.LITERAL:
                _discard(self._literal, key, acl)
                continue
            if _discard(self._prefixed, key, acl):
                self._prefix_name_removed(acl.resource_type, len(acl.name))

    def _prefix_name_removed(self, resource_type: ResourceType, length: int) -> None:
        count_key = (resource_type, length)
        self._prefix_names[count_key] -= 1
        if self._prefix_names[count_key]:
            return
        del self._prefix_names[count_key]
        lengths = self._prefix_lengths[resource_type]
        lengths.remove(length)
        if not lengths:
            del self._prefix_lengths[resource_type]

    # ---- decisions
    def authorize(self, principal: KafkaPrincipal, host: str, action: Action) -> bool:
        caller = str(principal)
        if caller in self.super_users:
            return True
        operation = action.operation
        granting = _IMPLIED_BY.get(operation)
        resource_acls_found = False
        allowed = False
        for bucket in self._resource_acls(action.resource_type, action.name):
            resource_acls_found = True
            for acl in bucket:
                if acl.principal not in (caller, WILDCARD_PRINCIPAL):
                    continue
                if acl.host not in (WILDCARD, host):
                    continue
                if acl.permission is PermissionType.DENY:
                    if acl.operation is AclOperation.ALL or acl.operation == operation:
                        return False
                elif not allowed and (
                    acl.operation is AclOperation.ALL
                    or acl.operation == operation
                    or (granting is not None and acl.operation in granting)
                ):
                    allowed = True
        if allowed:
            return True
        return not resource_acls_found and self.allow_everyone_if_no_acl_found

    def _resource_acls(self, resource_type: ResourceType, name: str) -> Iterator[set[AclBinding]]:
        """The non-empty buckets of bindings whose pattern matches the resource."""
        literal = self._literal.get((resource_type, name))
        if literal:
            yield literal
        if name != WILDCARD:
            wildcard = self._literal.get((resource_type, WILDCARD))
            if wildcard:
                yield wildcard
        for length in self._prefix_lengths.get(resource_type, ()):
            if length > len(name):
                break
            prefixed = self._prefixed.get((resource_type, name[:length]))
            if prefixed:
                yield prefixed

    def authorize_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Kafka's authorizeByResourceType: whether `principal` may perform `operation`
        on at least one resource of `resource_type`.

        First the literal resource "hardcode" is authorized (super users and
        allow-everyone pass there). Then the bindings of the type that apply to the
        caller (principal or User:*, host or *) for exactly `operation` or ALL (no implied
        operations here) are gathered: a DENY on the LITERAL `*` denies at once; an ALLOW
        on the LITERAL `*` allows. Otherwise an ALLOWed LITERAL name allows unless the
        same LITERAL name is DENYed or a DENYed PREFIXED name is a prefix of it; an
        ALLOWed PREFIXED name allows unless a DENYed PREFIXED name is a prefix of it
        (a LITERAL DENY never covers a PREFIXED ALLOW)."""
        assert operation not in (AclOperation.ANY, AclOperation.UNKNOWN), operation
        assert resource_type not in (ResourceType.ANY, ResourceType.UNKNOWN), resource_type
        key = (str(principal), host, operation, resource_type)
        answer = self._any_answers.get(key)
        if answer is None:
            if len(self._any_answers) >= AUTHORIZE_ANY_CACHE_MAX:
                self._any_answers.clear()
            answer = self._any_answers[key] = self._authorize_any(
                principal, host, operation, resource_type
            )
        return answer

    def _authorize_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        probe = Action(operation, resource_type, _AUTHORIZE_ANY_PROBE)
        if self.authorize(principal, host, probe):
            return True
        caller = str(principal)
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allow_literal: set[str] = set()
        allow_prefixed: set[str] = set()
        wildcard_allowed = False
        for who in {caller, WILDCARD_PRINCIPAL}:
            for acl in self._by_principal.get((resource_type, who), ()):
                if acl.host not in (WILDCARD, host):
                    continue
                if acl.operation is not AclOperation.ALL and acl.operation != operation:
                    continue
                literal = acl.pattern_type is PatternType.LITERAL
                if acl.permission is PermissionType.DENY:
                    if literal and acl.name == WILDCARD:
                        return False
                    (deny_literal if literal else deny_prefixed).add(acl.name)
                elif literal and acl.name == WILDCARD:
                    wildcard_allowed = True
                else:
                    (allow_literal if literal else allow_prefixed).add(acl.name)
        if wildcard_allowed:
            return True
        lengths = sorted({len(prefix) for prefix in deny_prefixed})
        for name in allow_literal:
            if name not in deny_literal and not _has_prefix_in(name, deny_prefixed, lengths):
                return True
        return any(not _has_prefix_in(name, deny_prefixed, lengths) for name in allow_prefixed)


def _has_prefix_in(name: str, prefixes: set[str], lengths: list[int]) -> bool:
    """Whether some prefix of `name` (itself included) is in `prefixes`, whose distinct
    lengths are `lengths` (sorted)."""
    for length in lengths:
        if length > len(name):
            return False
        if name[:length] in prefixes:
            return True
    return False


def _discard(
    index: dict[tuple[ResourceType, str], set[AclBinding]],
    key: tuple[ResourceType, str],
    acl: AclBinding,
) -> bool:
    """Remove `acl` from its bucket; True when that emptied (and dropped) the bucket."""
    bucket = index.get(key)
    if bucket is None:
        return False
    bucket.discard(acl)
    if bucket:
        return False
    del index[key]
    return True
