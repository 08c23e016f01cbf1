"""A broker started in this process, with its HTTP listener (`metrics.listener`:
`/metrics` and the web console), on a background thread: for benchmarks that time
work inside the broker's event loop (bench/console.py). Tests use a broker process.

Both ports are bound to 127.0.0.1 port 0 and read back. `stop()` shuts the broker down
gracefully (its HTTP listener first: the console sampler stops).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from shoal.config import BrokerConfig
from shoal.server.broker import Broker

START_TIMEOUT_S = 60.0


class InProcessBroker:
    def __init__(self, data_dir: Path, overrides: Mapping[str, str]) -> None:
        self.config = BrokerConfig.from_raw(
            {
                "log.dirs": str(data_dir),
                "listeners": "PLAINTEXT://127.0.0.1:0",
                "metrics.listener": "http://127.0.0.1:0",
                "offsets.topic.num.partitions": "1",
                "share.coordinator.state.topic.num.partitions": "1",
                "transaction.state.log.num.partitions": "1",
                **overrides,
            }
        )
        self.loop = asyncio.new_event_loop()
        self.broker: Broker | None = None
        self._stop: asyncio.Event | None = None
        self.kafka_port = 0
        self.http_port = 0
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="in-process-broker", daemon=True)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def start(self) -> InProcessBroker:
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            raise TimeoutError("in-process broker did not start")
        if self._failed is not None:
            raise RuntimeError("in-process broker failed to start") from self._failed
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main())
        finally:
            self.loop.close()

    async def _main(self) -> None:
        try:
            self._stop = asyncio.Event()
            broker = Broker(self.config)
            await broker.start()
            assert broker.http is not None, "metrics.listener is set"
            self.broker, self.kafka_port = broker, broker.bound_port
            self.http_port = broker.http.port
        except BaseException as exc:
            self._failed = exc
            self._ready.set()
            raise
        self._ready.set()
        await self._stop.wait()
        await broker.shutdown()

    def stop(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(START_TIMEOUT_S)
        assert not self._thread.is_alive(), "in-process broker did not stop"


@contextmanager
def running_in_process(data_dir: Path, overrides: Mapping[str, str]) -> Iterator[InProcessBroker]:
    broker = InProcessBroker(data_dir, overrides).start()
    try:
        yield broker
    finally:
        broker.stop()
