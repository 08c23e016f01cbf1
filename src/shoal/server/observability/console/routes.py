"""The console's routes, mounted by the HTTP app (server/observability/http_app.py), all under
`/console`.

- `GET /console/` the single page (static/index.html, with console.js and
  console.css from the package: no build step, no CDN);
- `GET /console/api/...` JSON views (views.py): `overview`, `topics`, `share-groups`,
  `share-groups/{id}`, `consumer-groups`, `consumer-groups/{id}`, `charts`;
- `GET /console/api/share-groups/{id}/events` server-sent events: the group's view
  (members, SPSO/SPEO, the in-flight window, what key-ordered and scheduled delivery
  hold back) pushed each
  `limits.CONSOLE_EVENT_INTERVAL_MS` when it changed, a keep-alive comment otherwise;
  at most `limits.CONSOLE_EVENT_STREAMS_MAX` streams at once (503 beyond);
- `POST /console/api/{share,consumer}-groups/{id}/reset-offsets` and
  `POST /console/api/groups/{id}/delete` (actions.py): 403 unless
  `console.allow.writes=true`, and 403 unless the request is same-origin (an
  `X-Shoal-Console: 1` header, which a cross-site page cannot send without a CORS
  preflight this app never grants, and a matching `Origin` when one is sent).

`Console.lifespan` runs the chart sampler (history.py) while the app is served.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from shoal import limits
from shoal.config import broker_keys
from shoal.server.handler_services import Services
from shoal.server.observability.console import actions, views
from shoal.server.observability.console.history import ChartHistory, Sample, run_sampler

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
PREFIX = "/console"
KEEPALIVE_EVERY = 15
"""Event intervals without a change between keep-alive comments."""
WRITE_HEADER = "x-shoal-console"


class Console:
    """The console of one broker: its routes, its chart history and its streams."""

    def __init__(
        self,
        services: Services,
        *,
        sample_interval_ms: int = limits.CONSOLE_SAMPLE_INTERVAL_MS,
        event_interval_ms: int = limits.CONSOLE_EVENT_INTERVAL_MS,
        streams_max: int = limits.CONSOLE_EVENT_STREAMS_MAX,
    ) -> None:
        self.services = services
        self.history = ChartHistory()
        self.sample_interval_ms = sample_interval_ms
        self.event_interval_ms = event_interval_ms
        self.streams_max = streams_max
        self.streams_open = 0

    # ---- lifecycle

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        sampler = asyncio.create_task(
            run_sampler(self.history, self.sample, interval_ms=self.sample_interval_ms),
            name="console-chart-sampler",
        )
        try:
            yield
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler

    async def sample(self) -> Sample:
        """The chart series and the lag over every group, computed a group at a time
        with the event loop let go between groups, so the broker's requests wait
        for one group's reads at most (bench/console.py: `sample`)."""
        totals = self.services.metrics.chart_series()
        share_ids, consumer_ids = views.lag_groups(self.services)
        share_lag = consumer_lag = 0
        for group_id in share_ids:
            share_lag += views.share_group_lag(self.services, group_id)
            await asyncio.sleep(0)
        for group_id in consumer_ids:
            consumer_lag += views.consumer_group_lag(self.services, group_id)
            await asyncio.sleep(0)
        return Sample(
            wall_ms=self.services.clock.wall_ms(),
            totals=totals,
            gauges={"share_lag": float(share_lag), "consumer_lag": float(consumer_lag)},
        )

    # ---- routes

    def routes(self) -> list[BaseRoute]:
        read = _json_route
        return [
            Route(PREFIX, lambda _r: RedirectResponse(f"{PREFIX}/"), methods=["GET"]),
            Route(f"{PREFIX}/", self.index, methods=["GET"]),
            Mount(f"{PREFIX}/static", app=StaticFiles(directory=STATIC_DIR), name="static"),
            read(f"{PREFIX}/api/overview", lambda _r: self.overview()),
            read(f"{PREFIX}/api/topics", lambda _r: views.topics(self.services)),
            read(f"{PREFIX}/api/share-groups", lambda _r: views.share_groups(self.services)),
            read(
                f"{PREFIX}/api/share-groups/{{group_id}}",
                lambda r: views.share_group(self.services, r.path_params["group_id"]),
            ),
            Route(f"{PREFIX}/api/share-groups/{{group_id}}/events", self.events, methods=["GET"]),
            read(f"{PREFIX}/api/consumer-groups", lambda _r: views.consumer_groups(self.services)),
            read(
                f"{PREFIX}/api/consumer-groups/{{group_id}}",
                lambda r: views.consumer_group(self.services, r.path_params["group_id"]),
            ),
            read(f"{PREFIX}/api/charts", lambda _r: self.history.series()),
            Route(
                f"{PREFIX}/api/share-groups/{{group_id}}/reset-offsets",
                self.write(actions.reset_share_group, with_target=True),
                methods=["POST"],
            ),
            Route(
                f"{PREFIX}/api/consumer-groups/{{group_id}}/reset-offsets",
                self.write(actions.reset_consumer_group, with_target=True),
                methods=["POST"],
            ),
            Route(
                f"{PREFIX}/api/groups/{{group_id}}/delete",
                self.write(actions.delete_group, with_target=False),
                methods=["POST"],
            ),
        ]

    async def index(self, _request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    def overview(self) -> dict[str, Any]:
        node = self.services.node
        config = self.services.config.current
        return {
            "node_id": node.node_id,
            "cluster_id": node.cluster_id,
            "allow_writes": config.get(broker_keys.CONSOLE_ALLOW_WRITES),
            "inflight_max_records": config.get(broker_keys.CONSOLE_INFLIGHT_MAX_RECORDS),
        }

    # ---- server-sent events

    async def events(self, request: Request) -> Response:
        group_id = request.path_params["group_id"]
        if self.streams_open >= self.streams_max:
            log.warning(
                "console: event stream for %r from %s refused: %d streams open (limit %d)",
                group_id,
                request.client.host if request.client else "?",
                self.streams_open,
                self.streams_max,
            )
            return JSONResponse(
                {"error": "TOO_MANY_STREAMS", "message": "too many console event streams"},
                status_code=503,
            )
        return StreamingResponse(
            self.share_group_events(group_id),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def share_group_events(
        self, group_id: str, *, max_events: int | None = None
    ) -> AsyncIterator[str]:
        """The group's view as an SSE `data:` line whenever it changed (checked every
        `event_interval_ms`), a comment every `KEEPALIVE_EVERY` quiet intervals; ends
        when the broker stops, the client goes, or after `max_events` (tests)."""
        self.streams_open += 1
        try:
            last: str | None = None
            quiet = 0
            sent = 0
            while not self.services.stopping():
                text = json.dumps(views.share_group(self.services, group_id), sort_keys=True)
                if text != last:
                    last, quiet = text, 0
                    yield f"data: {text}\n\n"
                    sent += 1
                    if max_events is not None and sent >= max_events:
                        return
                else:
                    quiet += 1
                    if quiet % KEEPALIVE_EVERY == 0:
                        yield ": keep-alive\n\n"
                await asyncio.sleep(self.event_interval_ms / 1000)
        finally:
            self.streams_open -= 1

    # ---- writes

    def write(
        self, action: Callable[..., actions.Outcome], *, with_target: bool
    ) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            refusal = self._refuse_write(request)
            if refusal is not None:
                return refusal
            group_id = request.path_params["group_id"]
            if with_target:
                try:
                    body = await request.json()
                except ValueError:
                    return JSONResponse({"error": "INVALID_REQUEST"}, status_code=400)
                to = body.get("to") if isinstance(body, dict) else None
                status, answer = action(self.services, group_id, to=str(to))
            else:
                status, answer = action(self.services, group_id)
            return JSONResponse(answer, status_code=status)

        return endpoint

    def _refuse_write(self, request: Request) -> Response | None:
        if not self.services.config.current.get(broker_keys.CONSOLE_ALLOW_WRITES):
            return _forbidden("console.allow.writes is false: the console is read-only")
        if request.headers.get(WRITE_HEADER) != "1":
            return _forbidden(f"a console write needs the {WRITE_HEADER} header")
        origin = request.headers.get("origin")
        host = request.headers.get("host", "")
        if origin is not None and origin not in (f"http://{host}", f"https://{host}"):
            log.warning("console: cross-origin write refused (Origin %s, Host %s)", origin, host)
            return _forbidden("cross-origin console writes are refused")
        return None


def _forbidden(message: str) -> Response:
    return JSONResponse({"error": "FORBIDDEN", "message": message}, status_code=403)


def _json_route(path: str, read: Callable[[Request], Any]) -> Route:
    async def endpoint(request: Request) -> Response:
        body = read(request)
        if body is None:
            return JSONResponse({"error": "NOT_FOUND"}, status_code=404)
        return JSONResponse(body, headers={"Cache-Control": "no-cache"})

    return Route(path, endpoint, methods=["GET"])


def console_routes(services: Services) -> list[BaseRoute]:
    """Every route of a console for `services` (without its chart sampler: use
    `Console(services)` and its `lifespan` to have charts)."""
    return Console(services).routes()
