"""The HTTP listener (`metrics.listener`): serves server/observability/http_app.py in the broker's
loop.

Off unless `metrics.listener` names an address (`http://127.0.0.1:9404`; no host
means loopback, port 0 an ephemeral port, logged once bound so tests find it). It
binds only the host the operator names: a non-loopback host is the operator's choice,
as Kafka's JMX port is.

uvicorn's `Server.serve()` runs as a task in the broker's event loop, on a socket
bound here (so the port is known at once and a bind error is the broker's start
error). uvicorn must not take the process's signals (the broker handles SIGTERM and
SIGINT), so `capture_signals` is a no-op; its own log lines go to our loggers
(`log_config=None`: no handlers of its own), its access log is off and its info
lines are quietened. `stop()` asks uvicorn to exit and waits at most
`STOP_TIMEOUT_S` (open streams such as the console's server-sent events are closed
after `GRACEFUL_TIMEOUT_S`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Generator

import uvicorn
from starlette.types import ASGIApp

log = logging.getLogger(__name__)

START_TIMEOUT_S = 10.0
"""How long `start` waits for uvicorn to serve the bound socket."""
GRACEFUL_TIMEOUT_S = 2
"""uvicorn's graceful shutdown bound: open HTTP connections are closed after it."""
STOP_TIMEOUT_S = 5.0
"""How long `stop` waits for uvicorn's task before cancelling it."""


class _BrokerOwnedServer(uvicorn.Server):
    """uvicorn's server without its signal handlers (the broker owns the signals)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class HttpListener:
    """One uvicorn server on one socket, started and stopped with the broker."""

    def __init__(self, app: ASGIApp, *, host: str, port: int) -> None:
        self.host = host
        self.requested_port = port
        self.port = 0
        """The bound port (set by `start`)."""
        self._app = app
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Bind and serve; raises OSError if the address cannot be bound, RuntimeError
        if uvicorn does not come up."""
        sock = _bind(self.host, self.requested_port)
        self.port = sock.getsockname()[1]
        logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
        config = uvicorn.Config(
            self._app,
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=GRACEFUL_TIMEOUT_S,
        )
        server = _BrokerOwnedServer(config)
        self._server = server
        self._task = asyncio.create_task(server.serve(sockets=[sock]), name="http-listener")
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT_S
        while not server.started:
            if self._task.done() or asyncio.get_running_loop().time() > deadline:
                sock.close()
                await self.stop()
                raise RuntimeError(f"metrics listener on {self.url} did not start")
            await asyncio.sleep(0.01)
        log.info("metrics listener on %s (/metrics)", self.url)

    async def stop(self) -> None:
        server, task = self._server, self._task
        if server is None or task is None:
            return
        self._server = self._task = None
        server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT_S)
        except TimeoutError:
            log.warning("metrics listener on %s did not stop in %.0f s", self.url, STOP_TIMEOUT_S)
            server.force_exit = True
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        except (Exception, SystemExit):  # uvicorn exits on a failed start; logged here
            log.exception("metrics listener on %s failed", self.url)
        log.info("metrics listener on %s stopped", self.url)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock
