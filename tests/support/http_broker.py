"""A broker started in this process with the HTTP app (`/metrics`, the web console)
served by uvicorn in the broker's own event loop, on a background thread.

The stand-in for the broker's `metrics.listener` until that listener is merged: the
same app (`server.http_app.build_app`) in the same loop as the broker, so the
console's reads never cross threads. Both ports are bound to 127.0.0.1 port 0 and
read back. `stop()` shuts uvicorn (the app's lifespan ends: the console sampler
stops) and then the broker down gracefully.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from shoal.config import BrokerConfig
from shoal.server.broker import Broker
from shoal.server.http_app import build_app

START_TIMEOUT_S = 60.0


class InProcessBroker:
    def __init__(self, data_dir: Path, overrides: Mapping[str, str]) -> None:
        self.config = BrokerConfig.from_raw(
            {
                "log.dirs": str(data_dir),
                "listeners": "PLAINTEXT://127.0.0.1:0",
                "offsets.topic.num.partitions": "1",
                "share.coordinator.state.topic.num.partitions": "1",
                "transaction.state.log.num.partitions": "1",
                **overrides,
            }
        )
        self.loop = asyncio.new_event_loop()
        self.broker: Broker | None = None
        self.http: uvicorn.Server | None = None
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
            broker = Broker(self.config)
            await broker.start()
            self.broker, self.kafka_port = broker, broker.bound_port
            config = uvicorn.Config(
                build_app(broker.services),
                host="127.0.0.1",
                port=0,
                lifespan="on",
                log_level="warning",
            )
            self.http = uvicorn.Server(config)
            serving = asyncio.create_task(self.http.serve())
            while not self.http.started:
                if serving.done():
                    serving.result()
                await asyncio.sleep(0.01)
            self.http_port = self.http.servers[0].sockets[0].getsockname()[1]
        except BaseException as exc:
            self._failed = exc
            self._ready.set()
            raise
        self._ready.set()
        await serving
        await broker.shutdown()

    def stop(self) -> None:
        if self.http is not None:
            self.loop.call_soon_threadsafe(setattr, self.http, "should_exit", True)
        self._thread.join(START_TIMEOUT_S)
        assert not self._thread.is_alive(), "in-process broker did not stop"


@contextmanager
def running_in_process(data_dir: Path, overrides: Mapping[str, str]) -> Iterator[InProcessBroker]:
    broker = InProcessBroker(data_dir, overrides).start()
    try:
        yield broker
    finally:
        broker.stop()
