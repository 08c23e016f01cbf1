"""`shoal acls`: add, remove and list ACLs, as Kafka's kafka-acls.sh does.

  --add    --allow-principal P [--allow-host H] | --deny-principal P [--deny-host H]
           [--operation OP ...] (--topic T | --group G | --transactional-id ID | --cluster)
           [--resource-pattern-type LITERAL|PREFIXED] [--producer [--idempotent]]
           [--consumer]
  --remove the same options (pattern types ANY and MATCH too); without a principal,
           every ACL of the resource; asks for confirmation unless --force
  --list   [resource options] [--principal P ...]; without a resource, every ACL

Output is kafka-acls.sh's: "Adding ACLs for resource `ResourcePattern(...)`:" with one
entry per line, then "Current ACLs for resource `...`:" for the resources named. Uses
CreateAcls, DeleteAcls and DescribeAcls (client/acl_requests.py).
Exit status: 0 done, 1 failed (message on stderr), 2 bad command line.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from typing import IO, Any

from shoal.cli.acls_options import (
    Entry,
    ResourceFilter,
    check_args,
    filters_to_entries,
    resource_filters,
)
from shoal.cli.kafka_options import ToolFailed, add_tool_parser, run_tool
from shoal.client import Client, acl_requests
from shoal.client.errors import ErrorCode, error_name
from shoal.security.authorizer import AclBinding, AclBindingFilter

_NEWLINE = "\n"


def add_parser(commands: Any) -> None:
    parser = add_tool_parser(
        commands,
        "acls",
        help_text="add, remove and list ACLs (kafka-acls.sh)",
        description=__doc__ or "",
    )
    for action in ("add", "remove", "list"):
        parser.add_argument(f"--{action}", action="store_true", help=f"{action} ACLs")
    many = {"action": "append", "default": None}
    parser.add_argument("--allow-principal", metavar="PRINCIPAL", **many)
    parser.add_argument("--deny-principal", metavar="PRINCIPAL", **many)
    parser.add_argument("--allow-host", metavar="HOST", **many)
    parser.add_argument("--deny-host", metavar="HOST", **many)
    parser.add_argument("--principal", metavar="PRINCIPAL", help="with --list", **many)
    parser.add_argument("--operation", metavar="OPERATION", help="default All", **many)
    parser.add_argument("--topic", metavar="TOPIC", **many)
    parser.add_argument("--group", metavar="GROUP", **many)
    parser.add_argument("--transactional-id", metavar="ID", **many)
    parser.add_argument("--cluster", action="store_true", help="the cluster resource")
    parser.add_argument(
        "--resource-pattern-type",
        default="LITERAL",
        metavar="TYPE",
        help="LITERAL (default), PREFIXED, ANY or MATCH (the last two for --list/--remove)",
    )
    parser.add_argument("--producer", action="store_true", help="a producer's ACLs")
    parser.add_argument("--idempotent", action="store_true", help="with --producer")
    parser.add_argument("--consumer", action="store_true", help="a consumer's ACLs")
    parser.add_argument("--force", action="store_true", help="remove without asking")
    parser.set_defaults(
        run=lambda args: run_tool(
            parser,
            args,
            validate=check_args,
            api_timeout_ms=lambda _args: None,
            action=_act,
            error_prefix="Error while executing ACL command: ",
        )
    )


def _act(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    if args.add:
        _add(client, args, out)
    elif args.remove:
        _remove(client, args, out)
    _list(client, args, out)
    return 0


def _entries_text(entries: set[Entry]) -> str:
    return _NEWLINE.join(f"\t{entry}" for entry in sorted(entries))


def _add(client: Client, args: argparse.Namespace, out: IO[str]) -> None:
    to_add = filters_to_entries(args)
    if any(not acls for acls in to_add.values()):
        raise ToolFailed(
            "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
        )
    for resource, acls in to_add.items():
        print(f"Adding ACLs for resource `{resource}`: {_NEWLINE} {_entries_text(acls)} ", file=out)
        print(file=out)
        bindings = [
            AclBinding(
                resource.resource_type,
                resource.name,
                resource.pattern_type,
                e.principal,
                e.host,
                e.operation,
                e.permission,
            )
            for e in sorted(acls)
        ]
        response = client.call(acl_requests.create_acls(bindings))
        for binding, result in zip(bindings, response.results, strict=True):
            if result.error_code != ErrorCode.none:
                raise ToolFailed(
                    f"creating {binding}: {error_name(result.error_code)}"
                    + (f": {result.error_message}" if result.error_message else "")
                )


def _confirm(prompt: str, args: argparse.Namespace, out: IO[str]) -> bool:
    if args.force:
        return True
    print(prompt, file=out)
    out.flush()
    return sys.stdin.readline().strip().lower() == "y"


def _remove(client: Client, args: argparse.Namespace, out: IO[str]) -> None:
    for resource, acls in filters_to_entries(args).items():
        if not acls:
            prompt = (
                f"Are you sure you want to delete all ACLs for resource filter `{resource}`? (y/n)"
            )
        else:
            prompt = (
                f"Are you sure you want to remove ACLs: {_NEWLINE} {_entries_text(acls)} "
                f"{_NEWLINE} from resource filter `{resource.filter_text()}`? (y/n)"
            )
        if not _confirm(prompt, args, out):
            continue
        filters = [_binding_filter(resource, e) for e in sorted(acls)] or [
            _binding_filter(resource, None)
        ]
        response = client.call(acl_requests.delete_acls(filters))
        for result in response.filter_results:
            if result.error_code != ErrorCode.none:
                raise ToolFailed(
                    f"removing ACLs of {resource}: {error_name(result.error_code)}"
                    + (f": {result.error_message}" if result.error_message else "")
                )


def _binding_filter(resource: ResourceFilter, entry: Entry | None) -> AclBindingFilter:
    if entry is None:
        return AclBindingFilter(resource.resource_type, resource.name, resource.pattern_type)
    return AclBindingFilter(
        resource.resource_type,
        resource.name,
        resource.pattern_type,
        entry.principal,
        entry.host,
        entry.operation,
        entry.permission,
    )


def _list(client: Client, args: argparse.Namespace, out: IO[str]) -> None:
    filters = resource_filters(args, required=False)
    wanted = (
        [AclBindingFilter(f.resource_type, f.name, f.pattern_type) for f in filters]
        if filters
        else [AclBindingFilter()]
    )
    by_resource: dict[ResourceFilter, set[Entry]] = defaultdict(set)
    for acl_filter in wanted:
        response = client.call(acl_requests.describe_acls(acl_filter))
        if response.error_code != ErrorCode.none:
            raise ToolFailed(
                f"listing ACLs: {error_name(response.error_code)}"
                + (f": {response.error_message}" if response.error_message else "")
            )
        for b in acl_requests.described_bindings(response):
            resource = ResourceFilter(b.resource_type, b.name, b.pattern_type)
            by_resource[resource].add(Entry(b.principal, b.host, b.operation, b.permission))
    principals = [p.strip() for p in args.principal or ()]
    if not principals:
        _print_resources(by_resource, out)
        return
    for principal in principals:
        print(f"ACLs for principal `{principal}`", file=out)
        mine = {
            resource: {e for e in acls if e.principal == principal}
            for resource, acls in by_resource.items()
        }
        _print_resources({r: acls for r, acls in mine.items() if acls}, out)


def _print_resources(by_resource: dict[ResourceFilter, set[Entry]], out: IO[str]) -> None:
    for resource in sorted(by_resource):
        entries = _entries_text(by_resource[resource])
        print(f"Current ACLs for resource `{resource}`: {_NEWLINE} {entries} ", file=out)
        print(file=out)
