"""Share-partition leader (KIP-932): the in-flight state machine of each share-partition.

Modules, bottom up:
- `states`: record states, acknowledgement types, the transition table.
- `inflight`: locks as data, in-flight batches that split per offset, the cache.
- `window`: one share-partition's window and the primitives that change states.
- `acquire`, `acknowledge`: the two request paths.
- `persister`: what state writes carry, the `Persister` protocol, `InMemoryPersister`.
- `leader_settings`: the group configuration read per operation; `share.auto.offset.reset`.
- `partition`: `SharePartition`, the public face.
"""
