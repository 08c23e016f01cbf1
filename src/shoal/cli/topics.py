"""`shoal topics`: create, list, describe, alter and delete topics.

Mirrors Kafka's kafka-topics.sh (options, messages, output):

  --create --topic T [--partitions N] [--replication-factor R] [--config k=v ...]
           [--if-not-exists]                       "Created topic T."
  --list [--topic REGEX] [--exclude-internal]      one name per line
  --describe [--topic REGEX] [--exclude-internal] [--if-exists]
      Topic: T  TopicId: ...  PartitionCount: N  ReplicationFactor: R  Configs: k=v,...
      then one line per partition: Topic, Partition, Leader, Replicas, Isr, Elr, LastKnownElr
      (partitions from DescribeTopicPartitions, API 75, a page of
      --partition-size-limit-per-response at a time; from Metadata, Elr and
      LastKnownElr N/A, when the broker lacks API 75)
  --alter --topic REGEX --partitions N [--if-exists]
  --delete --topic REGEX [--if-exists]

--topic takes a regular expression (matched against the whole name; commas separate
alternatives) except with --create. Internal topics are listed and described unless
--exclude-internal is given, as in Kafka. Configs shown are those not at their
default; against a cluster that does not serve DescribeConfigs (API 32), --describe
says so on stderr and shows the topics without configs (Kafka's tool would fail).
Topic ids print as Kafka prints them (URL-safe base64, 22 characters). Topics and
their configs come in the order Kafka's tool prints them (java_order.py). On a Shoal
broker whose HTTP listener is reachable, a compacted topic's partition lines are
followed by its cleaner's backlog and progress, one `Cleaner:` line per partition
(cleaner_view.py says where from); against Kafka the output is Kafka's.

--command-config names a file of admin-client properties (request.timeout.ms,
default.api.timeout.ms, client.id). Exit status: 0 done, 1 failed (message on
stderr), 2 bad command line.
"""

from __future__ import annotations

import argparse
import base64
import logging
import re
import sys
import uuid
from collections.abc import Sequence
from typing import IO, Any

from shoal.cli.cleaner_view import CleanerView, cleaner_view
from shoal.cli.java_order import described_topics_order, hash_map_order
from shoal.cli.kafka_options import (
    ToolFailed,
    UsageError,
    add_tool_parser,
    check_bootstrap,
    check_invalid,
    opt,
    present,
    require,
    run_tool,
)
from shoal.cli.topic_admin import (
    ConfigValue,
    create_partitions,
    create_topic,
    delete_topics,
    describe_topic_partitions,
    describe_topics,
    topic_configs,
)
from shoal.client import Client, KafkaError, TopicView
from shoal.client.errors import ErrorCode
from shoal.config import topic_keys
from shoal.progress import Progress

PROG = "shoal topics"
ERROR_PREFIX = "Error while executing topic command : "
ACTIONS = ("create", "list", "alter", "describe", "delete")
REPLICATION_FACTOR_MAX = 32_767
"""Kafka's bound on --replication-factor (an int16 on the wire)."""
OPERATION_TIMEOUT_MS = 30_000
DELETE_TOPICS_PER_REQUEST = 20
"""`--delete` sends the matching topics in DeleteTopics requests of this many, and
reports progress (stderr) when there is more than one request to send."""
PARTITIONS_PER_DESCRIBE_RESPONSE = 2000
"""`--describe` asks DescribeTopicPartitions (API 75) for pages of at most this many
partitions unless --partition-size-limit-per-response says otherwise (Kafka's default)."""
log = logging.getLogger(__name__)
"""The CreateTopics / DeleteTopics / CreatePartitions operation timeout sent to the
broker (Kafka's admin default)."""
_ALTER_CONFIG_HINT = (
    " (To alter topic configurations, use IncrementalAlterConfigs, e.g. Kafka's kafka-configs.sh.)"
)
_COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore "
    "('_') could collide. To avoid issues it is best to use either, but not both."
)


def add_parser(commands: Any) -> None:
    parser = add_tool_parser(
        commands,
        "topics",
        help_text="create, list, describe, alter and delete topics (kafka-topics.sh)",
        description=__doc__,
    )
    for action, text in (
        ("--create", "create a new topic"),
        ("--list", "list all available topics"),
        ("--describe", "list details for the given topics"),
        ("--alter", "increase the number of partitions"),
        ("--delete", "delete topics"),
    ):
        parser.add_argument(action, action="store_true", help=text)
    parser.add_argument("--topic", metavar="TOPIC", help="the topic (a regex, except for --create)")
    parser.add_argument("--partitions", type=int, metavar="N", help="number of partitions")
    parser.add_argument(
        "--replication-factor", type=int, metavar="R", help="replication factor (Shoal: 1)"
    )
    parser.add_argument(
        "--config", action="append", metavar="NAME=VALUE", help="topic config (repeatable)"
    )
    parser.add_argument("--if-exists", action="store_true", help="only if the topic exists")
    parser.add_argument(
        "--if-not-exists", action="store_true", help="do not fail if the topic exists"
    )
    parser.add_argument("--exclude-internal", action="store_true", help="leave internal topics out")
    parser.add_argument(
        "--partition-size-limit-per-response",
        type=int,
        default=PARTITIONS_PER_DESCRIBE_RESPONSE,
        metavar="N",
        help="partitions per DescribeTopicPartitions answer with --describe "
        f"(default {PARTITIONS_PER_DESCRIBE_RESPONSE})",
    )
    parser.set_defaults(run=run, parser=parser)


def run(args: argparse.Namespace, *, out: IO[str] | None = None) -> int:
    return run_tool(
        args.parser,
        args,
        validate=validate,
        api_timeout_ms=lambda a: None,
        action=act,
        out=out,
        error_prefix=ERROR_PREFIX,
    )


# ---- the command line


def validate(args: argparse.Namespace) -> None:
    """Kafka's TopicCommandOptions.checkArgs; parses --config into `args.configs`."""
    chosen = [a for a in ACTIONS if present(args, a)]
    if len(chosen) != 1:
        raise UsageError(
            "Command must include exactly one action: "
            "--list, --describe, --create, --alter or --delete"
        )
    if not present(args, "bootstrap_server"):
        raise UsageError("--bootstrap-server must be specified")
    check_bootstrap(args)
    if args.describe and args.if_exists and not args.topic:
        raise UsageError("--topic or --topic-id is required to describe a topic")
    if not args.list and not args.describe:
        require(args, "topic")
    if args.alter:
        if args.config:
            raise UsageError(
                f'Option "{opt("config")}" can\'t be used with option "{opt("alter")}"'
                + _ALTER_CONFIG_HINT
            )
        require(args, "partitions")
    others = [a for a in ACTIONS if a not in ("alter", "create")]
    check_invalid(args, "config", others)
    check_invalid(args, "partitions", others)
    check_invalid(args, "replication-factor", [a for a in ACTIONS if a != "create"])
    check_invalid(args, "if-exists", ["create", "list"])
    check_invalid(args, "if-not-exists", [a for a in ACTIONS if a != "create"])
    check_invalid(args, "exclude-internal", ["create", "alter", "delete"])
    rf = args.replication_factor
    if rf is not None and not 1 <= rf <= REPLICATION_FACTOR_MAX:
        raise UsageError(
            f"The replication factor must be between 1 and {REPLICATION_FACTOR_MAX} inclusive"
        )
    if args.partitions is not None and args.partitions < 1:
        raise UsageError("The partitions must be greater than 0")
    args.configs = parse_configs(args.config or [])
    if args.topic is not None and not args.create:
        args.topic_pattern = topic_pattern(args.topic)


def parse_configs(items: Sequence[str]) -> dict[str, str]:
    """`name=value` items, blanks around `=` trimmed, exactly one `=` each (Kafka)."""
    out: dict[str, str] = {}
    for item in items:
        parts = re.split(r"\s*=\s*", item)
        if len(parts) != 2 or not parts[0].strip():
            raise UsageError(
                "requirement failed: Invalid topic config: all configs to be added must be in "
                'the format "key=val".'
            )
        out[parts[0].strip()] = parts[1].strip()
    return out


def topic_pattern(text: str) -> re.Pattern[str]:
    """Kafka's IncludeList: commas are alternatives, blanks and surrounding quotes
    dropped, the whole name must match."""
    cleaned = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", text.strip().replace(" ", "")))
    try:
        return re.compile(cleaned.replace(",", "|"))
    except re.error as exc:
        raise UsageError(f"{text} is an invalid regex: {exc}") from None


def topic_id_text(topic_id: uuid.UUID) -> str:
    """A topic id as Kafka prints a Uuid: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


# ---- the actions


def act(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    if args.create:
        return _create(client, args, out)
    if args.list:
        for name in sorted(_matching(client, args)):
            print(name, file=out)
        return 0
    if args.describe:
        return _describe(client, args, out)
    if args.alter:
        return _alter(client, args, out)
    return _delete(client, args, out)


def _matching(client: Client, args: argparse.Namespace) -> dict[str, TopicView]:
    """Every topic allowed by --topic and --exclude-internal, by name."""
    topics, _ = describe_topics(client, None)
    pattern: re.Pattern[str] | None = getattr(args, "topic_pattern", None)
    exclude_internal = bool(getattr(args, "exclude_internal", False))
    return {
        name: info
        for name, info in topics.items()
        if (pattern is None or pattern.fullmatch(name)) and not (info.internal and exclude_internal)
    }


def _existing(client: Client, args: argparse.Namespace) -> dict[str, TopicView]:
    """The matching topics; none for a --topic without --if-exists fails (Kafka's
    ensureTopicExists)."""
    found = _matching(client, args)
    if args.topic and not found and not args.if_exists:
        raise ToolFailed(f"Topic '{args.topic}' does not exist as expected")
    return found


def _create(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    name = args.topic
    if "." in name or "_" in name:
        print(_COLLISION_WARNING, file=out)
    rf = args.replication_factor
    try:
        create_topic(
            client,
            name,
            partitions=-1 if args.partitions is None else args.partitions,
            replication_factor=-1 if rf is None else rf,
            configs=args.configs,
            timeout_ms=OPERATION_TIMEOUT_MS,
        )
    except KafkaError as exc:
        if exc.code == ErrorCode.topic_already_exists and args.if_not_exists:
            return 0
        raise
    print(f"Created topic {name}.", file=out)
    return 0


def _describe(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    names = sorted(_existing(client, args))
    found = describe_topic_partitions(
        client, names, partition_limit=args.partition_size_limit_per_response
    )
    configs = _configs_if_served(client, names)
    views: dict[int, CleanerView] = {}
    """Per leader: its cleaner figures, asked once, for compacted topics only."""
    # Kafka's tool prints topics and configs in its Admin client's HashMaps' order
    for name in described_topics_order(names):
        info = found[name]
        by_name = {c.name: c for c in configs.get(name, [])}
        shown = ",".join(
            f"{c.name}={c.value}"
            for c in (by_name[n] for n in hash_map_order(by_name))
            if not c.is_default
        )
        partitions = [info.partitions[p] for p in sorted(info.partitions)]
        replication = len(partitions[0].replicas) if partitions else 0
        head = f"Topic: {name}"
        if info.topic_id is not None and info.topic_id.int != 0:
            head += f"\tTopicId: {topic_id_text(info.topic_id)}"
        head += f"\tPartitionCount: {len(info.partitions)}"
        head += f"\tReplicationFactor: {replication}\tConfigs: {shown}"
        print(head, file=out)
        for p in partitions:
            leader = str(p.leader) if p.leader >= 0 else "none"
            print(
                f"\tTopic: {name}\tPartition: {p.partition}\tLeader: {leader}"
                f"\tReplicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}"
                f"\tElr: {_ids(p.elr)}\tLastKnownElr: {_ids(p.last_known_elr)}",
                file=out,
            )
        policy = by_name.get(topic_keys.CLEANUP_POLICY.name)
        if policy is not None and "compact" in (policy.value or "").split(","):
            for p in partitions:  # a Shoal broker's cleaner figures (cleaner_view.py)
                if p.leader < 0:
                    continue
                if p.leader not in views:
                    views[p.leader] = cleaner_view(client, p.leader)
                figures = views[p.leader].get((name, p.partition))
                if figures is not None:
                    print(figures.line(p.partition), file=out)
    return 0


def _ids(nodes: Sequence[int] | None) -> str:
    """Node ids as Kafka's tool lists them; N/A for a list the broker did not give
    (Metadata has no ELR)."""
    return "N/A" if nodes is None else ",".join(map(str, nodes))


def _configs_if_served(client: Client, names: list[str]) -> dict[str, list[ConfigValue]]:
    try:
        return topic_configs(client, names)
    except KafkaError as exc:
        if exc.code != ErrorCode.unsupported_version:
            raise
        print(f"WARN {exc}: configs are not shown", file=sys.stderr)
        return {}


def _alter(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    found = _existing(client, args)
    if not found:
        return 0
    results = create_partitions(
        client, {name: args.partitions for name in sorted(found)}, timeout_ms=OPERATION_TIMEOUT_MS
    )
    return _report(results, "alter")


def _delete(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    found = _existing(client, args)
    if not found:
        return 0
    names = sorted(found)
    progress = Progress(
        "deleted",
        "topics",
        len(names),
        logger=log,
        stream=sys.stderr,
        quiet_below=DELETE_TOPICS_PER_REQUEST + 1,
    )
    results: dict[str, Any] = {}
    for start in range(0, len(names), DELETE_TOPICS_PER_REQUEST):
        chunk = names[start : start + DELETE_TOPICS_PER_REQUEST]
        results.update(delete_topics(client, chunk, timeout_ms=OPERATION_TIMEOUT_MS))
        progress.advance(len(chunk))
    progress.finish()
    return _report(results, "delete")


def _report(results: dict[str, Any], verb: str) -> int:
    failed = {name: error for name, error in results.items() if error is not None}
    for name, error in sorted(failed.items()):
        print(f"{ERROR_PREFIX}cannot {verb} '{name}': {error}", file=sys.stderr)
    return 1 if failed else 0
