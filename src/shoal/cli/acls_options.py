"""What `shoal acls` turns its command line into, as Kafka's AclCommand does: the
resource pattern filters (`--topic`, `--group`, `--transactional-id`, `--cluster`,
`--resource-pattern-type`), the access control entries (`--allow-principal`,
`--deny-principal`, `--allow-host`, `--deny-host`, `--operation`) and the
`--producer` / `--consumer` expansions. Pure: no client, no output.

Kafka's expansions:
- `--producer`: WRITE, DESCRIBE, CREATE on each topic; WRITE, DESCRIBE on each
  transactional id; with `--idempotent` IDEMPOTENT_WRITE on the cluster.
- `--consumer`: READ, DESCRIBE on each topic; READ on each group.
- otherwise every resource gets the `--operation`s (default ALL).
A principal's hosts are its `--allow-host` / `--deny-host` values, `*` when none.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from shoal.cli.kafka_options import UsageError, check_bootstrap, check_invalid, present
from shoal.security.acl import (
    CLUSTER_NAME,
    WILDCARD,
    AclOperation,
    KafkaPrincipal,
    PatternType,
    PermissionType,
    ResourceType,
)

SUPPORTED_OPERATIONS: dict[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset(
        {
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.CREATE,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset(
        {
            AclOperation.READ,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
        }
    ),
    ResourceType.CLUSTER: frozenset(
        {
            AclOperation.CREATE,
            AclOperation.CLUSTER_ACTION,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
            AclOperation.IDEMPOTENT_WRITE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset(
        {AclOperation.DESCRIBE, AclOperation.WRITE, AclOperation.TWO_PHASE_COMMIT}
    ),
}
"""Kafka's AclEntry.supportedOperations (ALL is valid everywhere too)."""


@dataclass(frozen=True, slots=True, order=True)
class ResourceFilter:
    """Kafka's ResourcePatternFilter (printed as Kafka prints it)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return f"ResourcePattern({self._fields()})"

    def filter_text(self) -> str:
        """As Kafka prints a ResourcePatternFilter (the --remove prompts)."""
        return f"ResourcePatternFilter({self._fields()})"

    def _fields(self) -> str:
        return (
            f"resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name}"
        )

    @property
    def is_specific(self) -> bool:
        return self.pattern_type in (PatternType.LITERAL, PatternType.PREFIXED)


@dataclass(frozen=True, slots=True, order=True)
class Entry:
    """Kafka's AccessControlEntry."""

    principal: str
    host: str
    operation: AclOperation
    permission: PermissionType

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, "
            f"operation={self.operation.name}, permissionType={self.permission.name})"
        )


def parse_operation(text: str) -> AclOperation:
    """`Read`, `READ`, `IdempotentWrite`, `IDEMPOTENT_WRITE`, `idempotent-write`."""
    snake = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", text.strip()).replace("-", "_").upper()
    try:
        operation = AclOperation[snake]
    except KeyError:
        raise UsageError(f"Invalid operation {text!r}") from None
    if operation in (AclOperation.ANY, AclOperation.UNKNOWN):
        raise UsageError(f"Invalid operation {text!r}")
    return operation


def parse_pattern_type(text: str) -> PatternType:
    try:
        pattern = PatternType[text.strip().upper()]
    except KeyError:
        raise UsageError(f"Invalid --resource-pattern-type {text!r}") from None
    if pattern is PatternType.UNKNOWN:
        raise UsageError(f"Invalid --resource-pattern-type {text!r}")
    return pattern


def _principals(values: list[str] | None) -> list[str]:
    out = []
    for value in values or ():
        try:
            out.append(str(KafkaPrincipal.parse(value.strip())))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    return out


def _hosts(values: list[str] | None, principals: list[str]) -> list[str]:
    if values:
        return [v.strip() for v in values]
    return [WILDCARD] if principals else []


def check_args(args: argparse.Namespace) -> None:
    """AclCommand's option checks, in its words."""
    check_bootstrap(args)
    actions = [a for a in ("add", "remove", "list") if present(args, a)]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove. ")
    check_invalid(
        args,
        "list",
        [
            "producer",
            "consumer",
            "allow-host",
            "allow-principal",
            "deny-host",
            "deny-principal",
        ],
    )
    check_invalid(args, "producer", ["operation", "deny-principal", "deny-host"])
    check_invalid(args, "consumer", ["operation", "deny-principal", "deny-host"])
    if present(args, "producer") and not present(args, "topic"):
        raise UsageError("With --producer you must specify a --topic")
    if present(args, "idempotent") and not present(args, "producer"):
        raise UsageError("The --idempotent option is only available if --producer is set")
    if present(args, "consumer") and (
        not present(args, "topic")
        or not present(args, "group")
        or (
            not present(args, "producer")
            and (present(args, "cluster") or present(args, "transactional_id"))
        )
    ):
        raise UsageError(
            "With --consumer you must specify a --topic and a --group and no --cluster or "
            "--transactional-id option should be specified."
        )
    pattern = parse_pattern_type(args.resource_pattern_type)
    if present(args, "add") and not ResourceFilter(ResourceType.TOPIC, "", pattern).is_specific:
        raise UsageError(
            f"A '--resource-pattern-type' value of '{pattern.name}' is not valid when adding acls."
        )
    for text in args.operation or ():
        parse_operation(text)
    _principals(args.allow_principal)
    _principals(args.deny_principal)
    _principals(args.principal)


def resource_filters(args: argparse.Namespace, *, required: bool) -> list[ResourceFilter]:
    """AclCommand.getResourceFilter: the filters the resource options name."""
    pattern = parse_pattern_type(args.resource_pattern_type)
    filters: list[ResourceFilter] = []
    for topic in args.topic or ():
        filters.append(ResourceFilter(ResourceType.TOPIC, topic.strip(), pattern))
    if pattern is PatternType.LITERAL and (present(args, "cluster") or present(args, "idempotent")):
        filters.append(ResourceFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    for group in args.group or ():
        filters.append(ResourceFilter(ResourceType.GROUP, group.strip(), pattern))
    for tid in args.transactional_id or ():
        filters.append(ResourceFilter(ResourceType.TRANSACTIONAL_ID, tid.strip(), pattern))
    if not filters and required:
        raise UsageError(
            "You must provide at least one resource: --topic <topic> or --cluster or "
            "--group <group> or --transactional-id <id>"
        )
    return list(dict.fromkeys(filters))


def entries(args: argparse.Namespace, operations: set[AclOperation]) -> set[Entry]:
    """AclCommand.getAcl: every (principal, host, operation) of the allow and the deny
    options."""
    out: set[Entry] = set()
    for principals_opt, hosts_opt, permission in (
        (args.allow_principal, args.allow_host, PermissionType.ALLOW),
        (args.deny_principal, args.deny_host, PermissionType.DENY),
    ):
        principals = _principals(principals_opt)
        for principal in principals:
            for host in _hosts(hosts_opt, principals):
                for operation in operations:
                    out.add(Entry(principal, host, operation, permission))
    return out


def filters_to_entries(args: argparse.Namespace) -> dict[ResourceFilter, set[Entry]]:
    """AclCommand.getResourceFilterToAcls: per resource filter, the entries to add or
    remove (an empty set for remove = every ACL of the filter)."""
    filters = resource_filters(args, required=True)
    out: dict[ResourceFilter, set[Entry]] = {}
    producer, consumer = present(args, "producer"), present(args, "consumer")
    if not producer and not consumer:
        ops = {parse_operation(t) for t in args.operation or ()} or {AclOperation.ALL}
        out = {f: entries(args, ops) for f in filters}
    if producer:
        topic_ops = {AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE}
        tid_ops = {AclOperation.WRITE, AclOperation.DESCRIBE}
        for f in filters:
            if f.resource_type is ResourceType.TOPIC:
                out[f] = entries(args, topic_ops)
            elif f.resource_type is ResourceType.TRANSACTIONAL_ID:
                out[f] = entries(args, tid_ops)
        if present(args, "idempotent"):
            cluster = ResourceFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
            out[cluster] = entries(args, {AclOperation.IDEMPOTENT_WRITE})
    if consumer:
        for f in filters:
            if f.resource_type is ResourceType.TOPIC:
                ops = {AclOperation.READ, AclOperation.DESCRIBE}
            elif f.resource_type is ResourceType.GROUP:
                ops = {AclOperation.READ}
            else:
                continue
            out[f] = entries(args, ops) | out.get(f, set())
    for f, acls in out.items():
        valid = SUPPORTED_OPERATIONS.get(f.resource_type, frozenset()) | {AclOperation.ALL}
        if any(acl.operation not in valid for acl in acls):
            names = ", ".join(sorted(op.name for op in valid))
            raise UsageError(
                f"ResourceType {f.resource_type.name} only supports operations {names}"
            )
    return out
