"""Thin adapters that run what the cores return: the group, classic, transaction,
share-partition and share-state services (their internal topics, writes, effects
and timers), purgatory, the one timer driver, the log cleaner and the disk workers.
No domain rules of their own; handlers call them, they never call handlers.
"""
