"""Every hard bound in Shoal, named in one place.

Settings a user may change are config keys (see `config.py`); the values here are
the fixed ceilings and internal bounds. Each one has a test showing what a client
sees when it is hit. Units are last in names.
"""

from __future__ import annotations

from typing import Final

# Wire
REQUEST_HEADER_CLIENT_ID_BYTES_MAX: Final = 32_767
"""A client id is an int16-length string; longer cannot be encoded."""

# Connections
CONNECTIONS_MAX_DEFAULT: Final = 1_000
"""Default for `max.connections`: accepted sockets beyond this are closed at once."""

# Topics and partitions
TOPICS_MAX_DEFAULT: Final = 10_000
"""Default for `shoal.max.topics`: CreateTopics beyond it gets POLICY_VIOLATION... see config."""
PARTITIONS_PER_TOPIC_MAX: Final = 10_000
"""A topic may have at most this many partitions (INVALID_PARTITIONS beyond)."""
PARTITIONS_MAX_DEFAULT: Final = 100_000
"""Default for `shoal.max.partitions`, across all topics."""
TOPIC_NAME_LENGTH_MAX: Final = 249
"""Kafka's limit on a topic name's length (INVALID_TOPIC_EXCEPTION beyond)."""

# Fetch
FETCH_WAIT_MS_MAX: Final = 60_000
"""A Fetch's MaxWaitMs is clamped to this so a parked request never outlives the
client's socket timeout (librdkafka closes a connection at 60 s)."""

# Shutdown
SHUTDOWN_DRAIN_MS: Final = 5_000
"""How long graceful shutdown waits for in-flight requests before closing."""
