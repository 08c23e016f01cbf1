#!/usr/bin/env python3
"""Move `server/` into subpackages by role and `group/` into subpackages by protocol,
and rewrite every reference to the moved modules. Run once, on a clean tree, from the
repository root (or anywhere: it finds the root from its own path):

    .venv/bin/python scripts/relayout.py --dry-run   # print the plan, change nothing
    .venv/bin/python scripts/relayout.py             # apply it (git mv + rewrites)

What it does, in order:

1. Refuses to run twice (a new package's `__init__.py` already present) or on a dirty
   tree (unless `--allow-dirty`), and refuses the whole run, before changing anything,
   when a destination already exists (or a module sits where a new package goes).
2. Prints the move map (`MOVES`: old module -> new module, each with its one-line
   reason; `STAYS`: modules that keep their place, with theirs) and reports every
   `src/shoal/server/*.py` or `src/shoal/group/*.py` module, and every new subdirectory
   of them, the map does not name (modules added since the map was written: add them
   to `MOVES` or `STAYS` and re-run on a reset tree). A mapped module not in the tree
   (removed, or not merged yet) is skipped, and said.
3. Creates each new package's `__init__.py` (its docstring says what it owns), then
   `git mv`s every module.
4. Rewrites references in src/, tests/, bench/ (not bench/results/, the output of past
   runs), scripts/, docs/, examples/, README.md and pyproject.toml, in one left-to-right
   pass per file so nothing is rewritten twice:
   - `from shoal.server import x, y as z` is split by where each name now lives
     (a renamed module keeps its old name as an alias: `import new as old`);
   - dotted module names anywhere (imports, monkeypatch targets, logger names, `-m`
     arguments, mypy overrides, package-data keys): `shoal.server.timers` ->
     `shoal.server.services.timers`, `shoal.server.timers.TimerDriver` likewise;
   - path references in docs and comments: `server/timers.py`, `src/shoal/server/...`,
     `group/classic.py`, `server/console/` (a path segment only: `tests/unit/server/`
     is left alone).
5. Replaces the package docstrings that list modules by their old names (`DOCSTRINGS`,
   `EDITS`) and appends the rule of the new shape to tests/unit/test_layering.py
   (`LAYERING_TEST`: roles inside server/, share groups apart from the other protocols).
6. Runs `ruff check --select I --fix` and `ruff format` on the rewritten Python files
   (import order changes with the new paths), then wraps the comment and docstring
   lines the longer paths pushed past the line length (checking that the code's syntax
   tree is unchanged), stages everything, and prints what it did and what it could not
   do (to finish by hand).
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "shoal"
SELF = Path(__file__).resolve()

REWRITE_ROOTS = ["src", "tests", "bench", "scripts", "docs", "examples"]
REWRITE_FILES = ["README.md", "pyproject.toml"]
KEEP_AS_RECORDED = ("bench/results/",)
"""Output of past runs (logs, profiles, stacks): it says what the paths were then."""
TEXT_SUFFIXES = {
    ".py", ".pyi", ".md", ".rst", ".txt", ".toml", ".cfg", ".ini", ".yml", ".yaml",
    ".json", ".sh", ".java", ".properties", ".xml", ".js", ".html", ".css", "",
}  # fmt: skip


@dataclass(frozen=True)
class Move:
    old: str  # path under src/shoal, e.g. "server/timers.py" (or a package directory)
    new: str
    why: str


def _m(old: str, new: str, why: str) -> Move:
    return Move(old, new, why)


# ---- the map, reviewed module by module -------------------------------------------------

MOVES: list[Move] = [
    # server/net/: the wire. Everything between a socket and a decoded request.
    _m("server/listeners.py", "server/net/listeners.py", "binds every listener, TLS where asked"),
    _m(
        "server/connection.py",
        "server/net/connection.py",
        "one connection: frames, dispatch, writes",
    ),
    _m("server/tls.py", "server/net/tls.py", "SSLContext of SSL listeners, reload, peer principal"),
    _m(
        "server/sasl.py",
        "server/net/sasl.py",
        "per-connection SASL session, gate before each request",
    ),
    _m(
        "server/throttle.py",
        "server/net/throttle.py",
        "client quotas applied to a request's throttle time",
    ),
    _m("server/idle.py", "server/net/idle.py", "connection deadlines: idle, reauthentication"),
    _m(
        "server/warmup.py",
        "server/net/warmup.py",
        "warms the request path's decoders before serving",
    ),
    # server/handlers/common/: what several API handlers share (not an API: no @api).
    _m(
        "server/authorization.py",
        "server/handlers/common/authorization.py",
        "the one way a handler asks whether a request is authorized",
    ),
    _m(
        "server/authorized_operations.py",
        "server/handlers/common/authorized_operations.py",
        "authorized-operations bitfields of Metadata, DescribeCluster, describes",
    ),
    _m(
        "server/acl_wire.py",
        "server/handlers/common/acl_wire.py",
        "wire fields of the three ACL APIs to bindings and filters",
    ),
    _m(
        "server/assignments.py",
        "server/handlers/common/replica_assignments.py",
        "manual replica assignments of CreateTopics/CreatePartitions (renamed: says which)",
    ),
    _m(
        "server/offset_commits.py",
        "server/handlers/common/offset_commits.py",
        "steps OffsetCommit and TxnOffsetCommit share",
    ),
    _m(
        "server/state_rpc.py",
        "server/handlers/common/state_rpc.py",
        "validation and error mapping the share-state RPCs 83-87 share",
    ),
    _m(
        "server/share_responses.py",
        "server/handlers/common/share_responses.py",
        "the response ShareFetch and ShareAcknowledge both end with",
    ),
    _m(
        "server/delegation_tokens.py",
        "server/handlers/common/delegation_tokens.py",
        "the four token APIs' answers with token authentication off",
    ),
    _m(
        "server/config_changes.py",
        "server/handlers/common/config_changes.py",
        "the one validation and durability path of (Incremental)AlterConfigs; "
        "reads the request's authorization",
    ),
    # server/metadata/: the cluster's metadata and configs as the broker keeps them.
    _m(
        "server/acl_store.py",
        "server/metadata/acl_store.py",
        "the durable ACL set and live authorizer",
    ),
    _m(
        "server/quota_store.py",
        "server/metadata/quota_store.py",
        "durable client quotas and rate managers",
    ),
    _m(
        "server/scram_store.py",
        "server/metadata/scram_store.py",
        "SCRAM credentials per user and mechanism",
    ),
    _m(
        "server/group_configs.py",
        "server/metadata/group_config_store.py",
        "the store of group configs (renamed: group/configs.py is the pure value)",
    ),
    _m(
        "server/dynamic_config.py",
        "server/metadata/dynamic_config.py",
        "dynamic broker configs: per-broker and cluster-wide layers",
    ),
    _m(
        "server/client_metrics_configs.py",
        "server/metadata/client_metrics_configs.py",
        "CLIENT_METRICS config resources (KIP-714)",
    ),
    _m(
        "server/logger_configs.py",
        "server/metadata/logger_configs.py",
        "the BROKER_LOGGER config resource: this process's log levels",
    ),
    _m(
        "server/configs.py",
        "server/metadata/config_resources.py",
        "config resources as the admin APIs show them (renamed: three configs.py)",
    ),
    _m(
        "server/features.py",
        "server/metadata/features.py",
        "finalized and supported feature levels",
    ),
    _m(
        "server/quorum.py",
        "server/metadata/quorum.py",
        "this node as the metadata quorum's one voter",
    ),
    _m(
        "server/metadata_log.py",
        "server/metadata/metadata_log.py",
        "`__cluster_metadata-0` and the one metadata shard: the store of every kind above",
    ),
    _m(
        "server/metadata_migration.py",
        "server/metadata/migration.py",
        "the older versions' metadata files moved into the log once (renamed: the prefix "
        "repeated the package)",
    ),
    _m(
        "server/metadata_topics.py",
        "server/metadata/topic_catalog.py",
        "`MetadataTopicCatalog`, the log manager's topics in the metadata log (renamed: "
        "three topics.py already)",
    ),
    # server/services/: adapters that run the cores' effects, durable topics, disk work.
    _m(
        "server/group_service.py",
        "server/services/group_service.py",
        "group coordinator shard, runtime, effects",
    ),
    _m(
        "server/classic_service.py",
        "server/services/classic_service.py",
        "classic groups' writes, parked answers, timers",
    ),
    _m(
        "server/group_persistence.py",
        "server/services/group_persistence.py",
        "`__consumer_offsets`: sink, load, maintenance",
    ),
    _m(
        "server/txn_service.py",
        "server/services/txn_service.py",
        "transaction coordinator: state topic, markers, timers",
    ),
    _m(
        "server/share_service.py",
        "server/services/share_service.py",
        "share-partition leader: sessions, long-poll, lock timers",
    ),
    _m(
        "server/share_state.py",
        "server/services/share_state.py",
        "share coordinator: `__share_group_state`, load, timers",
    ),
    _m(
        "server/state_linger.py",
        "server/services/state_linger.py",
        "the share coordinator's append linger",
    ),
    _m(
        "server/share_dlq.py",
        "server/services/share_dlq.py",
        "writes the share groups' dead-letter copies (KIP-1191)",
    ),
    _m("server/purgatory.py", "server/services/purgatory.py", "where long-polling requests wait"),
    _m(
        "server/timers.py",
        "server/services/timers.py",
        "the one timer driver of every core deadline",
    ),
    _m("server/log_cleaner.py", "server/services/log_cleaner.py", "when and where compaction runs"),
    _m("server/disk_io.py", "server/services/disk_io.py", "blocking disk work in worker threads"),
    _m(
        "server/data_dir_lock.py",
        "server/services/data_dir_lock.py",
        "one broker process per data directory",
    ),
    # (modules the other parts of this work add; skipped where they do not exist yet)
    _m(
        "server/coordinator_host.py",
        "server/services/coordinator_host.py",
        "what every coordinator shell does around its runtime: loading, its timers",
    ),
    _m(
        "server/group_share_state.py",
        "server/services/group_share_state.py",
        "performs the group shard's share-state effects against the persister",
    ),
    # server/observability/: metrics, diagnostics, the HTTP listener and the console.
    _m(
        "server/metrics.py",
        "server/observability/metrics.py",
        "the broker's prometheus registry and counters",
    ),
    _m(
        "server/metric_families.py",
        "server/observability/metric_families.py",
        "cheap labelled counters and histograms",
    ),
    _m(
        "server/metrics_collectors.py",
        "server/observability/metrics_collectors.py",
        "scrape-time gauges read from the services",
    ),
    _m(
        "server/request_metrics.py",
        "server/observability/request_metrics.py",
        "request metrics at the handler boundary",
    ),
    _m(
        "server/timed_persister.py",
        "server/observability/timed_persister.py",
        "the persister, timed (load and write latency)",
    ),
    _m(
        "server/latency_trace.py",
        "server/observability/latency_trace.py",
        "per-stage timings, loop-lag probe (diagnostic)",
    ),
    _m(
        "server/stall_watch.py",
        "server/observability/stall_watch.py",
        "what the loop did when it stalled (diagnostic)",
    ),
    _m(
        "server/record_path.py",
        "server/observability/record_path.py",
        "each request's path through the broker (diagnostic)",
    ),
    _m(
        "server/http_app.py",
        "server/observability/http_app.py",
        "the HTTP app: /metrics and the console",
    ),
    _m(
        "server/http_listener.py",
        "server/observability/http_listener.py",
        "the HTTP listener serving http_app",
    ),
    _m(
        "server/console", "server/observability/console", "the web console (a package, moved whole)"
    ),
    # server/: the composition root and the contract between net, handlers and services.
    _m(
        "server/services.py",
        "server/handler_services.py",
        "`Services`, what handlers are given (renamed: `services/` is now the package)",
    ),
    # group/classic/: the classic protocol.
    _m(
        "group/classic.py",
        "group/classic/groups.py",
        "`ClassicGroups`: SyncGroup, Heartbeat, LeaveGroup, timers",
    ),
    _m("group/classic_join.py", "group/classic/join.py", "JoinGroup of classic groups"),
    _m(
        "group/classic_rebalance.py",
        "group/classic/rebalance.py",
        "the classic rebalance machinery",
    ),
    _m(
        "group/classic_state.py",
        "group/classic/state.py",
        "what classic operations take and return; live groups",
    ),
    _m(
        "group/classic_coordinator.py",
        "group/classic/coordinator.py",
        "classic APIs' entry points in the shard, group-id namespace",
    ),
    _m(
        "group/subscriptions.py",
        "group/classic/subscriptions.py",
        "the consumer protocol embedded in classic groups (JoinGroup/SyncGroup bytes)",
    ),
    # group/consumer/: the KIP-848 consumer protocol.
    _m("group/consumer_group.py", "group/consumer/group.py", "`ConsumerGroup`: replayed state"),
    _m(
        "group/consumer_membership.py",
        "group/consumer/membership.py",
        "ConsumerGroupHeartbeat rules",
    ),
    _m(
        "group/regex_refresh.py",
        "group/consumer/regex_refresh.py",
        "regex subscriptions, resolved after the heartbeat",
    ),
    _m(
        "group/range_assignor.py",
        "group/consumer/range_assignor.py",
        "Kafka's `range` server assignor",
    ),
    _m(
        "group/consumer_classic.py",
        "group/consumer/classic_members.py",
        "classic-protocol members of consumer groups (renamed: says what it serves)",
    ),
    _m(
        "group/migration.py",
        "group/consumer/migration.py",
        "online classic <-> consumer conversion",
    ),
    # group/share/: KIP-932 share groups.
    _m("group/share_group.py", "group/share/group.py", "`ShareGroup`: replayed state"),
    _m("group/membership.py", "group/share/membership.py", "ShareGroupHeartbeat rules"),
    _m(
        "group/lifecycle.py",
        "group/share/lifecycle.py",
        "share-partition state initialisation and deletion",
    ),
    _m("group/offsets.py", "group/share/offsets.py", "Alter/Delete/DescribeShareGroupOffsets"),
    _m(
        "group/queries.py",
        "group/share/queries.py",
        "ShareGroupDescribe and the share groups' ListGroups",
    ),
    # group/: what the protocols share, renamed where the name said too little.
    _m(
        "group/coordinator.py",
        "group/shard.py",
        "`GroupCoordinatorShard` (renamed: as txn/shard.py, share_coordinator/shard.py)",
    ),
    _m(
        "group/topics.py",
        "group/topic_image.py",
        "the topic image the shard sees (renamed: log/ and cli/ have topics.py)",
    ),
    _m(
        "group/assignor.py",
        "group/simple_assignor.py",
        "the simple assignor: share groups, and consumer groups' `uniform` (renamed: beside "
        "consumer/range_assignor.py)",
    ),
    # elsewhere: names repeated across packages, where a better one exists.
    _m(
        "share/settings.py",
        "share/leader_settings.py",
        "the group configs a share-partition leader reads (five settings.py)",
    ),
    _m(
        "share/transactions.py",
        "share/read_committed.py",
        "read_committed filtering of aborted batches (log/ owns transactions.py)",
    ),
]

STAYS: dict[str, str] = {
    "server/__init__.py": "the shell package",
    "server/broker.py": "the composition root: builds every part below and wires them",
    "server/context.py": "`RequestContext`, what the connection hands a handler",
    "server/registry.py": "API table: handlers register, the connection dispatches through it",
    "server/refused.py": "`Refused`/`CloseConnection`: how a handler unwinds to the connection",
    "server/connection_info.py": "leaf shared by net (connection), context and services (sessions)",
    "group/__init__.py": "the group coordinator's public names",
    "group/records.py": "`__consumer_offsets` record types of every protocol, `CODEC`",
    "group/results.py": "what the shard's operations return",
    "group/settings.py": "broker defaults plus per-group overrides, share and consumer",
    "group/configs.py": "group configs (resource type GROUP) as a pure value",
    "group/committed_offsets.py": "committed offsets of classic and consumer groups",
    "group/txn_offsets.py": "transactional offset commits pending their transaction",
    "group/log_bound.py": "live keys per `__consumer_offsets` partition",
    "group/log_maintenance.py": "one maintenance pass over `__consumer_offsets`",
}

PACKAGES: dict[str, str] = {
    "server/net": (
        "The wire: listeners (TLS), connections (frames in, dispatch through the registry,\n"
        "responses out), the SASL gate, client-quota throttling, connection deadlines and the\n"
        "request path's warm-up. The only part of the shell that touches sockets."
    ),
    "server/handlers/common": (
        "What several API handlers share and no one API owns: authorization, ACL wire\n"
        "fields, config changes, offset commits, the share RPCs' common responses and\n"
        "validation, replica assignments, delegation tokens. No module here registers an API."
    ),
    "server/metadata": (
        "The cluster metadata and configs the broker keeps: ACLs, client quotas, SCRAM\n"
        "credentials, group configs, dynamic broker configs, client-metrics and logger\n"
        "resources, config resources as the admin APIs show them, features and the quorum."
    ),
    "server/services": (
        "Thin adapters that run what the cores return: the group, classic, transaction,\n"
        "share-partition and share-state services (their internal topics, writes, effects\n"
        "and timers), purgatory, the one timer driver, the log cleaner and the disk workers.\n"
        "No domain rules of their own; handlers call them, they never call handlers."
    ),
    "server/observability": (
        "Metrics (the registry, labelled families, scrape-time collectors, request metrics),\n"
        "diagnostics (latency trace, stall watch, record path), the HTTP listener and the\n"
        "web console. They read the services; only the console's opt-in actions write."
    ),
    "group/classic": (
        "Classic consumer groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) inside the\n"
        "group coordinator shard: membership, rebalances, their state and the consumer\n"
        "protocol bytes they carry (sans-I/O)."
    ),
    "group/consumer": (
        "KIP-848 consumer groups: replayed state, ConsumerGroupHeartbeat rules, regex\n"
        "subscriptions, the range assignor, classic-protocol members of consumer groups and\n"
        "online migration between the protocols (sans-I/O)."
    ),
    "group/share": (
        "KIP-932 share groups: replayed state, ShareGroupHeartbeat rules, share-partition\n"
        "state lifecycle, offset administration and describe/list (sans-I/O)."
    ),
}

# Package docstrings that list modules by their old names: replaced whole.
DOCSTRINGS: dict[str, str] = {
    "server/__init__.py": (
        "The I/O shell: the only package with asyncio and sockets.\n\n"
        "By role: `net/` (listeners, connections, SASL, throttling), `handlers/` (one module\n"
        "per Kafka API; `handlers/common/` what several share), `services/` (adapters running\n"
        "the cores' effects, timers, purgatory, disk work), `metadata/` (ACLs, quotas,\n"
        "credentials, configs), `observability/` (metrics, diagnostics, HTTP, console). At\n"
        "the top: `broker` (the composition root) and the contract between the roles:\n"
        "`context`, `registry`, `refused`, `handler_services`, `connection_info`.\n"
    ),
    "group/__init__.py": (
        "Group coordinator for share groups, classic groups and KIP-848 consumer groups\n"
        "(sans-I/O, event-sourced).\n\n"
        "By protocol: `classic/` (JoinGroup, SyncGroup, Heartbeat, LeaveGroup and their\n"
        "rebalances), `consumer/` (KIP-848 heartbeats, regex subscriptions, the range\n"
        "assignor, migration from and to classic groups) and `share/` (KIP-932 share groups:\n"
        "heartbeats, state lifecycle, offsets, describe and list).\n\n"
        "What they share stays here: `records` (the `__consumer_offsets` record types and\n"
        "their `CODEC`), `results`, `settings`, `configs`, `topic_image`, `simple_assignor`\n"
        "(share groups, and consumer groups' `uniform`), `committed_offsets` and `txn_offsets`\n"
        "(offsets of classic and consumer groups), `log_bound` and `log_maintenance` (keeping\n"
        "the topic bounded), and `shard` (the `GroupCoordinatorShard` tying them together;\n"
        "its docstring says how a caller drives it).\n"
    ),
}

# Exact text edits for prose the general rewrite cannot see (bare module names).
EDITS: list[tuple[str, str, str]] = [
    (
        "src/shoal/group/classic/groups.py",
        "are in `classic_state`; the\nrebalance steps every operation shares (and the settings) "
        "in `classic_rebalance`;\nJoinGroup in `classic_join`;",
        "are in `state`; the\nrebalance steps every operation shares (and the settings) in "
        "`rebalance`;\nJoinGroup in `join`;",
    ),
    (
        "src/shoal/group/classic/rebalance.py",
        "JoinGroup is in `classic_join`, the other operations and timers in `classic`,",
        "JoinGroup is in `join`, the other operations and timers in `groups`,",
    ),
    (
        "src/shoal/group/classic/join.py",
        "(`classic_rebalance`); `classic` explains",
        "(`rebalance`); `groups` explains",
    ),
    (
        "src/shoal/group/classic/coordinator.py",
        "Rules are in `classic` (membership)",
        "Rules are in `groups` (membership)",
    ),
    (
        "src/shoal/group/consumer/membership.py",
        "the assignors live in assignor.py and range_assignor.py.",
        "the assignors live in group/simple_assignor.py and range_assignor.py.",
    ),
    (
        "src/shoal/group/records.py",
        "the builders in `membership`, `share_group` and `topics` keep them.",
        "the builders in `share/`\n(`membership`, `group`) and `topic_image` keep them.",
    ),
    (
        "src/shoal/group/shard.py",
        "delegates its rules to `membership`, `lifecycle`, `offsets` or `queries`.)",
        "delegates its rules to `share/`'s `membership`, `lifecycle`, `offsets` or `queries`.)",
    ),
    ("src/shoal/share/__init__.py", "- `settings`: ", "- `leader_settings`: "),
    (
        "src/shoal/server/handlers/__init__.py",
        "encode a kio response.",
        "encode a kio response. What several handlers share (and no API owns) is in\n`common/`.",
    ),
]

# The rule the new shape keeps, appended to tests/unit/test_layering.py (it uses that
# file's `_server_graph`, `_modules`, `_imports` and `SRC`).
LAYERING_TEST_FILE = "tests/unit/test_layering.py"
LAYERING_TEST_MARKER = "# ---- roles inside server/ and protocols inside group/"
LAYERING_TEST = r'''

# ---- roles inside server/ and protocols inside group/ (the shape scripts/relayout.py made)

SERVER_TOP = {
    "shoal.server",
    "shoal.server.broker",  # the composition root: the only module that imports every role
    "shoal.server.context",  # what a handler is given
    "shoal.server.registry",  # the API table net dispatches through (it loads handlers/)
    "shoal.server.refused",  # how a handler unwinds to its connection
    "shoal.server.handler_services",  # the services bundle handlers get
    "shoal.server.connection_info",  # a connection's state, shared by net, context, services
}
"""server/'s top level: the composition root and the contract between its roles."""

SERVER_ROLES: dict[str, set[str]] = {
    "net": {"services", "metadata", "observability"},
    "handlers": {"handlers.common", "services", "metadata", "net", "observability"},
    "handlers.common": {"services", "metadata"},
    "services": {"metadata", "observability"},
    "metadata": {"services"},
    "observability": {"services"},
}
"""Each role in server/ with the roles it may import (besides itself and SERVER_TOP
but the broker). Nothing imports handlers/ but the registry, so net reaches handlers only
through it; services never call handlers or net; observability reads the services and is
fed by the others, and never imports net, handlers or metadata (the console's opt-in
write actions go through the group service's admin operations)."""

SERVER_ROLE_ONLY: dict[tuple[str, str], set[str]] = {
    # a handler consults the wire-level gates: byte-rate throttling and the SASL session
    ("handlers", "net"): {"shoal.server.net.throttle", "shoal.server.net.sasl"},
    # the metadata stores write their files through the disk workers, off the loop
    ("metadata", "services"): {"shoal.server.services.disk_io"},
    # services feed diagnostics, nothing else of observability
    ("services", "observability"): {
        "shoal.server.observability.latency_trace",
        "shoal.server.observability.record_path",
    },
    ("handlers", "observability"): {"shoal.server.observability.record_path"},
}
"""Role edges allowed only towards the modules named (the exceptions, with why)."""

ROLE_PACKAGES = {"shoal.server." + r for r in SERVER_ROLES if r != "handlers.common"} | {
    "shoal.server.handlers.common"
}
"""The roles' `__init__` modules (docstrings only): `from shoal.server.net import sasl`
imports `sasl`, which the rule judges, and the package, which it does not."""


def _role(module: str) -> str:
    parts = module.split(".")
    if module in SERVER_TOP or len(parts) < 3:
        return "top"
    if parts[2] == "handlers":
        return "handlers.common" if parts[3:4] == ["common"] else "handlers"
    return parts[2]


def _role_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, targets in sorted(graph.items()):
        role = _role(module)
        for target in sorted(targets):
            other = _role(target)
            if role in ("top", other) or target in ROLE_PACKAGES:
                continue
            if other == "top":
                ok = target != "shoal.server.broker"
            else:
                only = SERVER_ROLE_ONLY.get((role, other))
                ok = other in SERVER_ROLES.get(role, set()) and (only is None or target in only)
            if not ok:
                bad.append(f"{module} ({role}) imports {target} ({other})")
    return bad


def test_server_top_level_is_the_root_and_the_contract() -> None:
    top = {m for m in _server_graph() if len(m.split(".")) <= 3 and m not in SERVER_TOP}
    roles = {m.split(".")[2] for m in top}
    assert not top - {"shoal.server." + r for r in SERVER_ROLES}, (
        f"modules at server/'s top level with no role: {sorted(top)}; move each into "
        "net/, handlers/, services/, metadata/ or observability/"
    )
    assert roles == {"net", "handlers", "services", "metadata", "observability"}


def test_server_roles_import_as_layered() -> None:
    bad = _role_violations(_server_graph())
    assert not bad, "role rule violated in server/:\n" + "\n".join(bad)


def test_the_role_checker_sees_violations() -> None:
    assert _role_violations({"shoal.server.services.x": {"shoal.server.handlers.fetch"}})
    assert _role_violations({"shoal.server.net.connection": {"shoal.server.handlers.fetch"}})
    assert _role_violations({"shoal.server.metadata.x": {"shoal.server.services.timers"}})
    assert not _role_violations({"shoal.server.handlers.fetch": {"shoal.server.net.throttle"}})
    assert _role("shoal.server.handlers.common.authorization") == "handlers.common"


def test_share_groups_stand_apart_from_the_consumer_protocols() -> None:
    """group/share/ uses what group/ shares, never group/classic/ or group/consumer/;
    no protocol package imports the shard that ties them together."""
    bad = []
    for protocol in ("classic", "consumer", "share"):
        for path in _modules(f"group/{protocol}"):
            for name in _imports(path):
                shard = name == "shoal.group.shard"
                crossed = protocol == "share" and name.startswith(
                    ("shoal.group.classic", "shoal.group.consumer")
                )
                if shard or crossed:
                    bad.append(f"{path.relative_to(SRC)} imports {name}")
    assert _modules("group/share"), "the share protocol package should exist"
    assert not bad, "\n".join(bad)
'''

UNPLACED_HINTS = ("server", "group")


# ---- planning ---------------------------------------------------------------------------


def module_name(rel: str) -> str:
    """`server/timers.py` -> `shoal.server.timers`; a package directory likewise."""
    return "shoal." + rel.removesuffix(".py").replace("/", ".")


def git(*args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        sys.exit(f"git {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def plan() -> tuple[list[Move], list[str], list[str]]:
    """(moves to make, mapped sources that are gone, modules the map does not place)."""
    applied = [p for p in PACKAGES if (SRC / p / "__init__.py").exists()]
    if applied:
        sys.exit(f"refusing: the relayout looks applied already ({', '.join(applied)} exist)")
    olds = [m.old for m in MOVES]
    news = [m.new for m in MOVES]
    dup = [p for p, n in Counter(olds + news).items() if n > 1]
    assert not dup, f"the map names these twice: {dup}"
    todo, gone = [], []
    for move in MOVES:
        if (SRC / move.old).exists():
            todo.append(move)
        else:
            gone.append(move.old)
    clash = [m.new for m in todo if _occupied(SRC / m.new)]
    moved = {m.old for m in todo}
    clash += [
        f"{p}.py (a module where the package {p}/ goes)"
        for p in PACKAGES
        if (SRC / f"{p}.py").exists() and f"{p}.py" not in moved
    ]
    if clash:
        sys.exit(f"refusing: destinations exist already: {clash}")
    placed = set(olds) | set(STAYS) | {"server/handlers"}
    unplaced = []
    for package in UNPLACED_HINTS:
        for path in sorted((SRC / package).iterdir()):
            rel = path.relative_to(SRC).as_posix()
            if path.name == "__pycache__" or rel in placed:
                continue
            if path.suffix == ".py" or (path.is_dir() and any(path.rglob("*.py"))):
                unplaced.append(rel)
    return todo, gone, unplaced


def _occupied(path: Path) -> bool:
    """A file, or a directory with more than byte-code caches left by an earlier tree."""
    if path.is_dir():
        return any(p.name != "__pycache__" for p in path.iterdir())
    return path.exists()


def name_map(moves: list[Move]) -> dict[str, str]:
    """Old dotted module name -> new, for every moved module."""
    return {module_name(m.old): module_name(m.new) for m in moves}


# ---- rewriting --------------------------------------------------------------------------


@dataclass
class Counts:
    imports_split: int = 0
    aliases: int = 0
    dotted: int = 0
    paths: int = 0
    manual: list[str] = field(default_factory=list)
    current: str = ""  # the file being rewritten


def build_rewriter(
    names: dict[str, str], moves: list[Move], counts: Counts
) -> Callable[[str], str]:
    parents = sorted({old.rsplit(".", 1)[0] for old in names}, key=len, reverse=True)
    from_re = (
        r"(?P<from>^(?P<indent>[ \t]*)from[ \t]+(?P<pkg>"
        + "|".join(re.escape(p) for p in parents)
        + r")[ \t]+import[ \t]+(?P<names>\([^)]*\)|[^\n]*?)(?P<trail>[ \t]*(?:#[^\n]*)?)$)"
    )
    dotted_re = (
        r"(?P<dotted>(?<![\w.])(?:"
        + "|".join(re.escape(o) for o in sorted(names, key=len, reverse=True))
        + r")(?!\w))"
    )
    path_old = {m.old.removesuffix(".py"): m for m in moves}
    path_re = (
        r"(?P<path>(?:(?<=shoal/)|(?<![\w./-]))(?P<pold>"
        + "|".join(re.escape(p) for p in sorted(path_old, key=len, reverse=True))
        + r")(?P<ext>\.py)?(?![\w-]))"
    )
    pattern = re.compile("|".join([from_re, dotted_re, path_re]), re.MULTILINE)

    def from_import(match: re.Match[str]) -> str:
        pkg, indent = match["pkg"], match["indent"]
        body = match["names"].strip()
        if body.startswith("("):
            body = body[1:-1]
        if "#" in body:  # a comment inside the parentheses: leave it to a person
            words = re.findall(r"\w+", re.sub(r"#[^\n]*", "", body))
            if any(f"{pkg}.{w}" in names for w in words):
                line = match.string.count("\n", 0, match.start()) + 1
                counts.manual.append(f"{counts.current}:{line}: {match[0].strip()!r}")
            return match[0]
        items = [i.strip() for i in body.replace("\\\n", " ").split(",") if i.strip()]
        groups: dict[str, list[str]] = defaultdict(list)
        changed = False
        for item in items:
            name, _, alias = (p.strip() for p in item.partition(" as "))
            new = names.get(f"{pkg}.{name}")
            if new is None:
                groups[pkg].append(item)
                continue
            changed = True
            new_pkg, new_name = new.rsplit(".", 1)
            shown = alias or name
            if new_name != shown:
                counts.aliases += not alias
                groups[new_pkg].append(f"{new_name} as {shown}")
            else:
                groups[new_pkg].append(new_name)
        if not changed:
            return match[0]
        counts.imports_split += 1
        lines = [f"{indent}from {p} import {', '.join(groups[p])}" for p in groups]
        lines[0] += match["trail"]
        return "\n".join(lines)

    def replace(match: re.Match[str]) -> str:
        if match["from"] is not None:
            return from_import(match)
        if match["dotted"] is not None:
            counts.dotted += 1
            return names[match["dotted"]]
        counts.paths += 1
        move = path_old[match["pold"]]
        return move.new.removesuffix(".py") + (match["ext"] or "")

    def rewrite(text: str) -> str:
        return pattern.sub(replace, text)

    return rewrite


def files_to_rewrite() -> list[Path]:
    tracked = git("ls-files", "-z", *REWRITE_ROOTS, *REWRITE_FILES).split("\0")
    found = []
    for rel in tracked:
        path = ROOT / rel
        if not rel or not path.is_file() or path.resolve() == SELF:
            continue
        if rel.startswith(KEEP_AS_RECORDED):
            continue
        if path.suffix in TEXT_SUFFIXES:
            found.append(path)
    return found


def set_docstring(path: Path, doc: str) -> bool:
    text = path.read_text()
    tree = ast.parse(text)
    first = tree.body[0] if tree.body else None
    lines = text.splitlines(keepends=True)
    new = f'"""{doc.rstrip()}\n"""\n' if "\n" in doc.rstrip() else f'"""{doc.rstrip()}"""\n'
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        start, end = first.lineno - 1, first.end_lineno or first.lineno
        lines[start:end] = [new]
    else:
        lines.insert(0, new)
    path.write_text("".join(lines))
    return True


LINE_LENGTH = 100  # pyproject.toml's [tool.ruff] line-length


def _string_statement_lines(tree: ast.AST) -> set[int]:
    """Lines of string statements: docstrings, attribute docstrings (a bare string is
    an expression whose value nothing reads, so a line break inside changes nothing)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def reflow(path: Path, inserted: list[str]) -> list[str]:
    """Wrap the lines the rewrite made too long, where wrapping cannot change behaviour:
    comments and docstrings (a string in code is reported instead)."""
    text = path.read_text()
    lines = text.split("\n")
    if not any(len(line) > LINE_LENGTH for line in lines):
        return []
    docs = _string_statement_lines(ast.parse(text))
    out: list[str] = []
    unfixed = []
    carry: tuple[str, str] | None = None  # (lead, words) cut from the line before
    for number, original in enumerate(lines, 1):
        line, carried = original, False
        if carry is not None:
            lead, words = carry
            carry = None
            if _continues(line, lead, number, docs):
                line, carried = lead + words + " " + line[len(lead) :], True
            else:
                out.extend(_cut(lead + words, lead))
        if len(line) <= LINE_LENGTH or not (carried or any(w in line for w in inserted)):
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        if line.lstrip().startswith("#"):
            lead = indent + "# "
        elif number in docs:
            lead = indent
        elif split := _split_literal(line):
            out.extend(split)
            continue
        else:
            unfixed.append(f"{path.relative_to(ROOT)}:{number}: too long, in code")
            out.append(line)
            continue
        cut = line.rfind(" ", len(lead) + 1, LINE_LENGTH + 1)
        if cut <= len(lead):
            unfixed.append(f"{path.relative_to(ROOT)}:{number}: too long, no space")
            out.append(line)
            continue
        out.append(line[:cut])
        carry = (lead, line[cut + 1 :])
    if carry is not None:
        out.extend(_cut(carry[0] + carry[1], carry[0]))
    result = "\n".join(out)
    if ast.dump(_without_docs(ast.parse(result))) != ast.dump(_without_docs(ast.parse(text))):
        sys.exit(f"reflow would change {path}'s code: a bug in this script")
    path.write_text(result)
    return unfixed


def _continues(line: str, lead: str, number: int, docs: set[int]) -> bool:
    """Whether `line` goes on with the paragraph a line with `lead` was cut from, so the
    cut words can join it (not a blank line, a list item, a table, a fence, a quote)."""
    if not line.startswith(lead) or (not lead.endswith("# ") and number not in docs):
        return False
    rest = line[len(lead) :]
    return bool(rest.strip()) and not (
        rest[0] == " "
        or rest.startswith(("-", "*", "|", "```", '"""', ">", "#"))
        or re.match(r"\d+[.)] ", rest) is not None
    )


def _cut(line: str, lead: str) -> list[str]:
    """`line` cut at spaces into lines within the limit, each after `lead`."""
    out = []
    while len(line) > LINE_LENGTH:
        cut = line.rfind(" ", len(lead) + 1, LINE_LENGTH + 1)
        if cut <= len(lead):
            break
        out.append(line[:cut])
        line = lead + line[cut + 1 :]
    return [*out, line]


def _split_literal(line: str) -> list[str] | None:
    """A line that is one plain string literal (an argument, an item), as two adjacent
    literals, which Python joins into the same string; None if it is not one."""
    indent = line[: len(line) - len(line.lstrip())]
    match = re.fullmatch(r'"([^"\\]*)"(,?)', line.strip())
    if match is None:
        return None
    body, comma = match.groups()
    cut = body.rfind(" ", 0, LINE_LENGTH - len(indent) - 2)
    if cut <= 0:
        return None
    return [f'{indent}"{body[: cut + 1]}"', f'{indent}"{body[cut + 1 :]}"{comma}']


def _without_docs(tree: ast.Module) -> ast.Module:
    """The tree with string statements blanked: what reflow may change."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            node.value.value = ""
    return tree


def ruff() -> str | None:
    beside = Path(sys.executable).parent / "ruff"
    return str(beside) if beside.exists() else shutil.which("ruff")


# ---- leftovers the rewrite cannot see ---------------------------------------------------

LEFTOVER_PATTERNS = [
    (r"shoal\.(server|group|share)\.\{", "a module name built with an f-string"),
    (r"/\s*\"(server|group)\"\s*/", "a path built from parts"),
    (r"import_module\([^)]*(server|group)", "a dynamic import"),
]


def leftovers(files: list[Path]) -> list[str]:
    found = []
    for path in files:
        text = path.read_text(errors="replace")
        for pattern, why in LEFTOVER_PATTERNS:
            for m in re.finditer(pattern, text):
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {why}: {m[0]!r}")
    return found


# ---- main -------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the plan only")
    parser.add_argument("--allow-dirty", action="store_true", help="run on uncommitted work")
    parser.add_argument("--no-ruff", action="store_true", help="skip ruff's import sort/format")
    args = parser.parse_args()

    todo, gone, unplaced = plan()
    print(f"move map: {len(todo)} moves ({len(gone)} mapped sources gone)")
    per_package: Counter[str] = Counter()
    for m in todo:
        per_package[str(Path(m.new).parent)] += 1
        print(f"  {m.old:42} -> {m.new:50} {m.why}")
    print("stays:")
    for rel, why in STAYS.items():
        if (SRC / rel).exists():
            print(f"  {rel:42}    {why}")
    print("modules per destination package:", dict(sorted(per_package.items())))
    for rel in gone:
        print(f"SKIPPED (not in this tree): {rel}")
    for rel in unplaced:
        print(f"NOT IN THE MAP (place it by hand): src/shoal/{rel}")
    if args.dry_run:
        return 0
    if not args.allow_dirty and git("status", "--porcelain").strip():
        sys.exit("refusing: the tree has uncommitted changes (commit them, or --allow-dirty)")

    for package, doc in PACKAGES.items():
        directory = SRC / package
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "__init__.py").write_text(f'"""{doc}\n"""\n')
        git("add", str(directory / "__init__.py"))
    for m in todo:
        (SRC / m.new).parent.mkdir(parents=True, exist_ok=True)
        if (SRC / m.new).is_dir():  # only caches (checked above): git mv would nest into it
            shutil.rmtree(SRC / m.new)
        git("mv", str(SRC / m.old), str(SRC / m.new))
    print(f"created {len(PACKAGES)} packages, moved {len(todo)} modules with git mv")

    names = name_map(todo)
    counts = Counts()
    rewrite = build_rewriter(names, todo, counts)
    files = files_to_rewrite()
    touched = []
    for path in files:
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        counts.current = str(path.relative_to(ROOT))
        new = rewrite(text)
        if new != text:
            path.write_text(new)
            touched.append(path)

    for rel, doc in DOCSTRINGS.items():
        if (SRC / rel).exists() and set_docstring(SRC / rel, doc):
            touched.append(SRC / rel)
    missed_edits = []
    for rel, old, new in EDITS:
        path = ROOT / rel
        text = path.read_text() if path.exists() else ""
        if old in text:
            path.write_text(text.replace(old, new, 1))
            touched.append(path)
        else:
            missed_edits.append(f"{rel}: {old!r} not found")

    layering = ROOT / LAYERING_TEST_FILE
    if layering.exists() and LAYERING_TEST_MARKER not in layering.read_text():
        layering.write_text(layering.read_text().rstrip("\n") + "\n" + LAYERING_TEST)
        touched.append(layering)
        print(f"appended the server/ role rule and the group/ protocol rule to {layering.name}")
    else:
        missed_edits.append(f"{LAYERING_TEST_FILE}: role rule not appended (missing or present)")

    touched = sorted(set(touched))
    by_kind = Counter(p.relative_to(ROOT).parts[0] for p in touched)
    print(
        f"rewrote {len(touched)} files {dict(sorted(by_kind.items()))}: "
        f"{counts.imports_split} `from package import module` statements split, "
        f"{counts.aliases} of them with an alias keeping a renamed module's old name, "
        f"{counts.dotted} dotted module names, {counts.paths} path references"
    )

    py = [str(p) for p in touched if p.suffix == ".py"]
    tool = None if args.no_ruff else ruff()
    if py and tool:
        subprocess.run(
            [tool, "check", "--select", "I", "--fix", "--quiet", *py], cwd=ROOT, check=False
        )
        subprocess.run([tool, "format", "--quiet", *py], cwd=ROOT, check=False)
        print(f"ruff: imports sorted and formatted in {len(py)} Python files")
    elif py:
        print("ruff not found: run `ruff check --select I --fix` and `ruff format` yourself")
    inserted = [m.new.removesuffix(".py") for m in todo] + list(names.values())
    too_long = [line for p in py for line in reflow(Path(p), inserted)]
    git("add", "-A", "--", *(str(p) for p in touched))

    print("could not rewrite automatically (check by hand):")
    manual = [f"an import with a comment inside: {line}" for line in counts.manual]
    for line in [*missed_edits, *manual, *too_long, *leftovers(files)]:
        print(f"  {line}")
    print(
        "  prose naming a moved module by its bare name (`timers`, `group_service`) is left "
        "as it is"
    )
    print("done: review `git status`, then commit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
