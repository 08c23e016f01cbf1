"""A stateful Quix Streams application, exactly-once, for tests/ecosystem/test_quix_streams.py.

Run with the Quix venv's python (tests/support/quix_venv.py), never Shoal's:

    python app.py BOOTSTRAP STATE_DIR [--delay-ms N] [--batch-bytes N]

It reads JSON records `{"i": int, "v": int}` keyed by a string from the input topic and
writes two outputs, both through Quix's changelog-backed state stores:

- `quix-running`: for every input record, the key's running count and sum after it
  (`{"i", "count", "sum"}`), kept in `State` under "count" and "sum";
- `quix-windows`: the sum of `v` over each key's closed 1-second tumbling windows of
  record time (`{"start", "end", "value"}`), emitted when a later window of the key opens.

`processing_guarantee="exactly-once"`: each checkpoint is one Kafka transaction holding
the outputs, the changelog updates and the consumer offsets. `--delay-ms` slows each
record so a test can crash things mid-stream; `--batch-bytes` bounds the producer's
batches (a broker with small segments refuses larger ones). SIGTERM stops it cleanly.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from quixstreams import Application, State

INPUT = "quix-in"
RUNNING = "quix-running"
WINDOWS = "quix-windows"
GROUP = "quix-sums"
WINDOW_MS = 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bootstrap")
    parser.add_argument("state_dir")
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--batch-bytes", type=int, default=0, help="producer batch.size")
    args = parser.parse_args()
    delay_s = args.delay_ms / 1000.0

    app = Application(
        broker_address=args.bootstrap,
        consumer_group=GROUP,
        auto_offset_reset="earliest",
        processing_guarantee="exactly-once",
        commit_interval=0.5,
        state_dir=args.state_dir,
        loglevel="INFO",
        # One instance, a static group member (KIP-345): its restarted successor takes
        # its place at once, and its membership outlives a broker restart (a reference
        # Kafka takes ~20 s to come back) rather than lapsing after librdkafka's 45 s.
        consumer_extra_config={"group.instance.id": "quix-sums-0", "session.timeout.ms": 30000},
        # One instance, so one stable transactional.id (Quix draws a random one by
        # default): a restarted instance's InitProducerId fences its killed predecessor
        # and aborts that one's open transaction at once, rather than read_committed
        # readers waiting for transaction.timeout.ms (a minute) to pass.
        producer_extra_config={
            "transactional.id": "quix-sums-0",
            **({"batch.size": args.batch_bytes} if args.batch_bytes else {}),
        },
    )
    source = app.dataframe(app.topic(INPUT, value_deserializer="json"))

    def running(value: dict[str, Any], state: State) -> dict[str, int]:
        if delay_s:
            time.sleep(delay_s)
        count = state.get("count", 0) + 1
        total = state.get("sum", 0) + value["v"]
        state.set("count", count)
        state.set("sum", total)
        return {"i": value["i"], "count": count, "sum": total}

    source.apply(running, stateful=True).to_topic(app.topic(RUNNING, value_serializer="json"))
    (
        source.apply(lambda value: value["v"])
        .tumbling_window(duration_ms=WINDOW_MS)
        .sum()
        .final()
        .to_topic(app.topic(WINDOWS, value_serializer="json"))
    )
    app.run()


if __name__ == "__main__":
    main()
