"""The client metrics keys (resource type CLIENT_METRICS, KIP-714), each declared once:
stored and shown as Kafka does, with no effect (NoEffect.TELEMETRY: Shoal pushes no
subscriptions; server/metadata/client_metrics_configs.py keeps them)."""

from __future__ import annotations

from shoal.config.checks import check_match
from shoal.config.definition import Declarer, NoEffect, Scope

_declare = Declarer(Scope.CLIENT_METRICS)

INTERVAL_MS = _declare.integer(
    "interval.ms",
    300_000,
    "How often matching clients push their metrics (100 ms to 1 hour).",
    no_effect=NoEffect.TELEMETRY,
)
MATCH = _declare.strings(
    "match",
    [],
    "Which clients the subscription applies to: <client selector>=<regular expression>.",
    no_effect=NoEffect.TELEMETRY,
    check=check_match,
)
METRICS = _declare.strings(
    "metrics",
    [],
    "Prefixes of the metric names matching clients push.",
    no_effect=NoEffect.TELEMETRY,
)

DEFINITIONS = _declare.definitions
"""Every client metrics key's definition, in declaration order."""
