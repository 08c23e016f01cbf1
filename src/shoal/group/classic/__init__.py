"""Classic consumer groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) inside the
group coordinator shard: membership, rebalances, their state and the consumer
protocol bytes they carry (sans-I/O).
"""
