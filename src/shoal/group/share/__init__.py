"""KIP-932 share groups: replayed state, ShareGroupHeartbeat rules, share-partition
state lifecycle, offset administration and describe/list (sans-I/O).
"""
