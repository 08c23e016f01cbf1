"""Deterministic simulation of the broker's cores and of the broker itself
(`python -m shoal.sim`).

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

A second scenario (`shell_world`) runs the real broker, `server.broker.Broker`, with
its handlers, purgatory, timers, services and coordinators, on the simulator's event
loop (`loop`: virtual time, a seeded order of task steps, processes that die),
network (`pipes`) and disk (`shell_disk`, `disk`), with consumer-group members, a
transactional producer, a read_committed consumer and share members speaking the
Kafka protocol through the client core; crashes, clean restarts, power losses,
dropped and slow connections and slow disks come from the seed, and the invariants
(`shell_invariants`, `shell_share`) are asked over the wire (docs/design/simulation.md).
Two variants of it (`shell_share_ext`) give the share group Shoal's key-ordered or
scheduled delivery and check them as the members see them (`shell_share_keys`).

Owns: `base` (the run loop of the share scenario), `world`, `broker`, `invariants`
(the share scenario), `loop`, `pipes`, `shell_disk`, `shell_connection`,
`shell_world`, `shell_txn`, `shell_share`, `shell_produce`, `shell_invariants` (the
shell scenario), `shell_share_ext`, `shell_share_keys` (its key-order and scheduled
variants), `disk` (fsyncs, power losses, torn tails),
`faults` (the seeded fault plan), `run` (one seed, many seeds, figures). The share
scenario imports the cores and `log/` only; the shell scenario is a harness above the
server (it builds the broker as `shoal serve` does). The only randomness is the
seeded generators, so a failing seed replays exactly.
"""
