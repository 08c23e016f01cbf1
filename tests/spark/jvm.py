"""JVM options of the tests' Spark drivers (the shared session and the killed children)."""

from __future__ import annotations

QUICK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
"""The JIT's first tier only: the tests' queries are small and short, and the second
tier's compiler threads took half of the driver JVM's CPU (tests/spark/test_batch.py,
one process: 40 s of JVM CPU, 21 s with this)."""
