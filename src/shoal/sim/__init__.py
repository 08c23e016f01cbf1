"""Deterministic simulation of the broker's sans-I/O cores (`python -m shoal.sim`).

A run is a seed. The seed drives one `random.Random` that chooses a schedule of
operations (idempotent produce batches, share members acquiring and acknowledging
with ACCEPT / RELEASE / REJECT, session releases, clock advances that expire
acquisition locks) interleaved with faults (crashes between "records written" and
"response sent", torn last batches, lost and late responses, clock jumps). The cores
are driven through the same entry points the server uses: `SharePartitionManager`
over a real `PartitionLog`, with the `ShareCoordinator` writing its records to a real
`__share_group_state` log through `LogRecordSink`; a crash abandons both logs (no
clean shutdown), may tear the last written batch, and recovery reopens the logs and
replays them. Invariants are checked after every step and after every recovery
(`shoal.sim.invariants`).

A second scenario (`coord_world`) drives the group and transaction coordinators
(consumer-group members, a transactional producer, `__consumer_offsets` and
`__transaction_state` on real logs) the same way. Both may lose power: `disk` keeps
what each fsync made durable and drops, file by file, what was written since.

Owns: `base` (what both worlds share: the run loop, the schedule notes, the
weighted step choice, answers in flight), `world`, `broker`, `invariants` (the share
scenario), `coord_world`, `coord_clients`, `coord_broker`, `coord_invariants` (the
coordinator scenario), `disk` (fsyncs, power losses, torn tails), `faults` (the
seeded fault plan), `run` (one seed, many seeds, figures). It may import the cores
and `log/`, never `server/`, asyncio or sockets. Time is a `ManualClock`; the only
randomness is the seeded generators, so a failing seed replays exactly.
"""
