"""Write JSON order events to a Shoal (or any Kafka) topic, with a few malformed ones.

    python examples/orders_producer.py --bootstrap 127.0.0.1:9092 --topic orders \
        --count 10000 --partitions 2 --malformed-every 97

Each event is a JSON object keyed by its customer:

    {"order_id": 17, "customer": "c-0042", "item": "tea", "quantity": 3,
     "unit_price": 4.5, "ts": "2025-01-01T12:00:00.017Z"}

Every `--malformed-every`-th event is broken on purpose (cut short, a quantity that is
not a number, or a missing item) so the pipeline has something to reject. The topic is
created with `--partitions` partitions if it does not exist. Uses confluent-kafka
(`pip install -e '.[spark]'` brings it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import sys

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

ITEMS = {"tea": 4.5, "coffee": 3.2, "scone": 2.75, "jam": 6.0, "honey": 8.25}
BASE_TIME = datetime.datetime(2025, 1, 1, 12, 0, tzinfo=datetime.UTC)


def order_event(order_id: int, rng: random.Random) -> dict[str, object]:
    item = rng.choice(sorted(ITEMS))
    ts = BASE_TIME + datetime.timedelta(milliseconds=order_id)
    return {
        "order_id": order_id,
        "customer": f"c-{rng.randrange(1000):04d}",
        "item": item,
        "quantity": rng.randint(1, 5),
        "unit_price": ITEMS[item],
        "ts": ts.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }


def malformed_event(order_id: int, rng: random.Random) -> bytes:
    event = order_event(order_id, rng)
    kind = order_id % 3
    if kind == 0:
        return json.dumps(event).encode()[:20]  # cut short: not JSON
    if kind == 1:
        event["quantity"] = "several"  # not a number
    else:
        del event["item"]  # a required field is missing
    return json.dumps(event).encode()


def events(count: int, *, malformed_every: int, seed: int) -> list[tuple[bytes, bytes]]:
    """(key, value) of `count` events, every `malformed_every`-th malformed (0: none)."""
    rng = random.Random(seed)
    out = []
    for order_id in range(count):
        if malformed_every and order_id % malformed_every == malformed_every - 1:
            value = malformed_event(order_id, rng)
        else:
            value = json.dumps(order_event(order_id, rng)).encode()
        out.append((f"c-{order_id % 1000:04d}".encode(), value))
    return out


def ensure_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    if topic in admin.list_topics(timeout=30).topics:
        return
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions)])
    try:
        futures[topic].result(timeout=30)
    except KafkaException as exc:  # created meanwhile by someone else: fine
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise


def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for key, value in records:
        while True:
            try:
                producer.produce(topic, value=value, key=key)
                break
            except BufferError:
                producer.poll(0.05)
    left = producer.flush(60)
    if left:
        raise RuntimeError(f"{left} events were not delivered to {topic}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--malformed-every", type=int, default=97)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    ensure_topic(args.bootstrap, args.topic, args.partitions)
    records = events(args.count, malformed_every=args.malformed_every, seed=args.seed)
    produce(args.bootstrap, args.topic, records)
    bad = sum(
        1
        for i in range(args.count)
        if args.malformed_every and i % args.malformed_every == args.malformed_every - 1
    )
    print(f"produced {args.count} order events ({bad} malformed) to {args.topic}", file=sys.stderr)


if __name__ == "__main__":
    main()
