"""A ShareConsumer in a process of its own, for crash tests: it polls (explicit mode,
no acknowledgements) until it holds `--count` records, prints them as one JSON line
[[partition, offset, delivery_count], ...] on stdout, then idles (its librdkafka
threads keep heartbeating) until it is killed.

    python -m tests.support.share_child --bootstrap HOST:PORT --group G --topic T --count N
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from confluent_kafka import ShareConsumer


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--count", type=int, required=True)
    args = parser.parse_args()
    consumer = ShareConsumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([args.topic])
    held: list[list[int]] = []
    deadline = time.monotonic() + 60
    while len(held) < args.count:
        if time.monotonic() > deadline:
            print(json.dumps({"error": f"only {len(held)} records"}), flush=True)
            return 1
        batch = consumer.poll(0.2)
        for message in batch:
            if message.error() is not None:
                print(json.dumps({"error": str(message.error())}), flush=True)
                return 1
            held.append(
                [
                    int(message.partition() or 0),
                    int(message.offset() or 0),
                    int(message.delivery_count() or 0),
                ]
            )
        if len(held) < args.count and batch:
            # Explicit mode: a poll with unacknowledged records raises, so a child
            # that needs more than one batch would have to acknowledge; it never does.
            print(json.dumps({"error": f"first batch held only {len(held)} records"}), flush=True)
            return 1
    print(json.dumps(held), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
