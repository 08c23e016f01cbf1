"""An exactly-once consume-transform-produce worker in a process of its own, for crash
tests: a read_committed Consumer in a classic group (static member, so a restarted
worker takes its predecessor's place at once) and a transactional Producer. Per batch it
begins a transaction, produces `out-<value>` to the output topic (same partition),
adds the consumed positions with `send_offsets_to_transaction`, and commits. It prints
`ready` once `init_transactions` has fenced its predecessor and `committed N` after each
commit; any Kafka error ends it with status 1 (the test restarts it, as a supervisor
would). It never exits by itself otherwise: the test SIGKILLs it.

    python -m tests.support.eos_child --bootstrap H:P --group G --input IN --output OUT \
        --transactional-id T [--batch 5] [--pause-ms 20]
"""

from __future__ import annotations

import argparse
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--pause-ms", type=int, default=20)
    args = parser.parse_args()
    pause_s = args.pause_ms / 1000
    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "transactional.id": args.transactional_id,
            "transaction.timeout.ms": 60_000,
            "linger.ms": 5,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 500,
        }
    )
    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "group.instance.id": "eos-worker",
            "session.timeout.ms": 6_000,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 500,
        }
    )
    try:
        producer.init_transactions(30)
        print("ready", flush=True)
        consumer.subscribe([args.input])
        committed = 0
        while True:
            batch = [
                m for m in consumer.consume(num_messages=args.batch, timeout=0.5) if not m.error()
            ]
            if not batch:
                continue
            producer.begin_transaction()
            for message in batch:
                producer.produce(
                    args.output,
                    key=message.key(),
                    value=b"out-" + (message.value() or b""),
                    partition=message.partition(),
                )
            time.sleep(pause_s)  # widen the window in which a kill lands mid-transaction
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
            )
            time.sleep(pause_s)
            producer.commit_transaction(30)
            committed += len(batch)
            print(f"committed {committed}", flush=True)
    except KafkaException as error:
        print(f"error {error}", flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
