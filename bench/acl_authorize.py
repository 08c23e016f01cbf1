"""Cost of one StandardAuthorizer decision with many ACLs (no broker, no I/O).

Run from the repository root:

    .venv/bin/python -m bench.acl_authorize            # 10k ACLs
    .venv/bin/python -m bench.acl_authorize --acls 100000

The ACL set: `--acls` bindings over as many topics, half LITERAL and half
PREFIXED, for 50 principals, ALLOW and DENY mixed, plus a `*` wildcard. Measured:
`authorize` of a READ on a topic with ACLs, on a topic with none, on a prefix-covered
topic; and `authorize_any` (WRITE on any topic) for a principal with and without ACLs
(answers are remembered until the ACLs change) and its scan of the principal's ACLs.
Each figure is the median of 5 rounds of 20k calls, in microseconds per call. The
target is under 20 us for `authorize` at 10k ACLs. Prints a table and
writes JSON to bench/results/acl_authorize.json (with the date and the machine).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

from bench.produce_fetch import save_result
from shoal.security.acl import (
    AclOperation,
    Action,
    KafkaPrincipal,
    PatternType,
    PermissionType,
    ResourceType,
)
from shoal.security.authorizer import AclBinding, StandardAuthorizer

_OPS = [AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL]


def build(count: int) -> StandardAuthorizer:
    acls = []
    for i in range(count):
        prefixed = i % 2 == 1
        name = f"team{i % 97}.svc{i}" if not prefixed else f"team{i % 97}.{i}"
        acls.append(
            AclBinding(
                ResourceType.TOPIC if i % 5 else ResourceType.GROUP,
                name,
                PatternType.PREFIXED if prefixed else PatternType.LITERAL,
                f"User:u{i % 50}",
                "*" if i % 7 else f"10.0.0.{i % 200}",
                _OPS[i % len(_OPS)],
                PermissionType.DENY if i % 11 == 0 else PermissionType.ALLOW,
            )
        )
    acls.append(
        AclBinding(
            ResourceType.TOPIC,
            "*",
            PatternType.LITERAL,
            "User:monitor",
            "*",
            AclOperation.DESCRIBE,
            PermissionType.ALLOW,
        )
    )
    return StandardAuthorizer(acls=acls)


def per_call_us(fn: Callable[[], object], calls: int = 20_000, rounds: int = 5) -> float:
    results = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        results.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--acls", type=int, default=10_000)
    args = parser.parse_args()
    authorizer = build(args.acls)
    user = KafkaPrincipal("User", "u2")
    stranger = KafkaPrincipal("User", "nobody")
    host = "10.0.0.2"
    topic = ResourceType.TOPIC
    cases: dict[str, Callable[[], object]] = {
        "authorize: topic with ACLs": lambda: authorizer.authorize(
            user, host, Action(AclOperation.READ, topic, "team2.svc2")
        ),
        "authorize: topic without ACLs": lambda: authorizer.authorize(
            user, host, Action(AclOperation.READ, topic, "zzz-unknown-topic-name")
        ),
        "authorize: prefix-covered topic": lambda: authorizer.authorize(
            user, host, Action(AclOperation.DESCRIBE, topic, "team3.12345-orders")
        ),
        "authorize_any: principal with ACLs": lambda: authorizer.authorize_any(
            user, host, AclOperation.WRITE, topic
        ),
        "authorize_any: principal without": lambda: authorizer.authorize_any(
            stranger, host, AclOperation.WRITE, topic
        ),
        "authorize_any: the scan (not remembered)": lambda: authorizer._authorize_any(
            user, host, AclOperation.WRITE, topic
        ),
    }
    figures = {label: per_call_us(fn) for label, fn in cases.items()}
    print(f"{len(authorizer)} ACLs")
    for label, us in figures.items():
        print(f"{label:<40} {us:8.2f} us/call")
    document = {
        "acls": len(authorizer),
        "us_per_call": figures,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg": os.getloadavg(),
        },
    }
    print(f"results: {save_result('acl_authorize', document)}")


if __name__ == "__main__":
    main()
