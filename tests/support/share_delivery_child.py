"""A ShareConsumer in a process of its own that logs every delivery and its
acknowledgement, for the key-order and scheduled-delivery end-to-end tests (the
parent side is tests/support/share_deliveries.py).

It polls in explicit mode; for each non-empty poll it writes a `recv` line (the
records, with the time poll returned them), holds the batch `--hold-ms`, acknowledges
every record by the fate in its value (`<seq>:<fate>`: `a` ACCEPT, `r` RELEASE on the
first delivery then ACCEPT, `p` RELEASE every time; anything else ACCEPT), writes a
`send` line, calls commit_sync and writes an `ans` line with the outcome. Lines are
JSON, flushed one by one, so a SIGKILL loses at most a half-written last line. Times
are CLOCK_MONOTONIC (`t`, shared by every process of the machine) and, for `recv`,
the wall clock in epoch milliseconds (`wall_ms`). Its `--stall-poll`-th non-empty poll
(from 0) is held `--stall-ms` instead (past a lock, say). It exits, closing the
consumer, once the `--stop` file exists.

    python -m tests.support.share_delivery_child --bootstrap HOST:PORT --group G \
        --topic T --id N --log PATH --stop PATH [--hold-ms MS] [--max-poll-records N] \
        [--stall-poll N --stall-ms MS]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import IO, Any, cast

from confluent_kafka import AcknowledgeType, KafkaException, Message, ShareConsumer

COMMIT_TIMEOUT_S = 15.0
ACCEPT, RELEASE = "accept", "release"


def fate_of(message: Message) -> str:
    """How this delivery is acknowledged, from the fate letter of its value."""
    value = message.value() or b""
    fate = value.rpartition(b":")[2]
    if fate == b"p" or (fate == b"r" and message.delivery_count() == 1):
        return RELEASE
    return ACCEPT


def write(log: IO[str], **event: Any) -> None:
    log.write(json.dumps(event) + "\n")
    log.flush()


def record(message: Message) -> list[Any]:
    """[offset, key, value, delivery count, timestamp ms, shoal.deliver.at header]."""
    key = message.key()
    value = message.value()
    deliver_at = None
    headers = cast("list[tuple[str, bytes | None]]", message.headers() or [])
    for name, header in headers:
        if name == "shoal.deliver.at" and header is not None:
            deliver_at = header.decode("ascii", "replace")
    return [
        int(message.offset() or 0),
        None if key is None else key.decode(),
        None if value is None else value.decode(),
        int(message.delivery_count() or 0),
        int(message.timestamp()[1]),
        deliver_at,
    ]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--id", type=int, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--stop", type=Path, required=True)
    parser.add_argument("--hold-ms", type=int, default=0)
    parser.add_argument("--max-poll-records", type=int, default=500)
    parser.add_argument("--stall-poll", type=int, default=-1)
    parser.add_argument("--stall-ms", type=int, default=0)
    args = parser.parse_args()
    polls = 0
    consumer = ShareConsumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "share.acknowledgement.mode": "explicit",
            "max.poll.records": args.max_poll_records,
            "reconnect.backoff.ms": 20,
            "reconnect.backoff.max.ms": 500,
        }
    )
    consumer.subscribe([args.topic])
    with open(args.log, "a", encoding="utf-8") as log:
        write(log, ev="start", c=args.id, t=time.monotonic())
        while not args.stop.exists():
            try:
                batch = consumer.poll(0.1)
            except KafkaException as exc:
                write(log, ev="error", c=args.id, t=time.monotonic(), where="poll", err=str(exc))
                time.sleep(0.05)
                continue
            messages = []
            for message in batch:
                if message.error() is None:
                    messages.append(message)
                else:
                    write(log, ev="error", c=args.id, t=time.monotonic(), err=str(message.error()))
            if not messages:
                continue
            write(
                log,
                ev="recv",
                c=args.id,
                t=time.monotonic(),
                wall_ms=time.time() * 1000,
                recs=[record(m) for m in messages],
            )
            hold_ms = args.stall_ms if polls == args.stall_poll else args.hold_ms
            polls += 1
            if hold_ms:
                time.sleep(hold_ms / 1000)
            acks = []
            for message in messages:
                fate = fate_of(message)
                kind = AcknowledgeType.RELEASE if fate == RELEASE else AcknowledgeType.ACCEPT
                consumer.acknowledge(message, kind)
                acks.append([int(message.offset() or 0), fate])
            write(log, ev="send", c=args.id, t=time.monotonic(), acks=acks)
            try:
                result = consumer.commit_sync(COMMIT_TIMEOUT_S)
                errors = [str(e) for e in result.values() if e is not None]
                ok = bool(result) and not errors
            except KafkaException as exc:
                ok, errors = False, [str(exc)]
            write(log, ev="ans", c=args.id, t=time.monotonic(), ok=ok, errors=errors)
        consumer.close()
        write(log, ev="closed", c=args.id, t=time.monotonic())
    return 0


if __name__ == "__main__":
    sys.exit(main())
