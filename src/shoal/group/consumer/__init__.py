"""KIP-848 consumer groups: replayed state, ConsumerGroupHeartbeat rules, regex
subscriptions, the range assignor, classic-protocol members of consumer groups and
online migration between the protocols (sans-I/O).
"""
