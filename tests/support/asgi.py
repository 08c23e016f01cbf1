"""Call an ASGI app in process, without a socket: one HTTP request, the whole answer.

For route tests of the HTTP app (server/observability/http_app.py): Starlette's TestClient needs
httpx2, which the venv does not have, and a request/response pair is all the tests
need. Streaming answers (server-sent events) are tested through their generators.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


async def call_async(
    app: ASGIApp,
    method: str,
    path: str,
    *,
    headers: Mapping[str, str] | None = None,
    body: bytes = b"",
    host: str = "127.0.0.1:9404",
) -> Answer:
    raw_headers = [(b"host", host.encode())]
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    path_only, _, query = path.partition("?")
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path_only,
        "raw_path": path_only.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": raw_headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 9404),
    }
    sent = False
    messages: list[Message] = []

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        messages.append(message)

    await app(scope, receive, send)
    start = next(m for m in messages if m["type"] == "http.response.start")
    return Answer(
        status=int(start["status"]),
        headers={k.decode(): v.decode() for k, v in start["headers"]},
        body=b"".join(m.get("body", b"") for m in messages if m["type"] == "http.response.body"),
    )


def call(app: ASGIApp, method: str, path: str, **kwargs: Any) -> Answer:
    """`call_async` on a fresh event loop."""
    return asyncio.run(call_async(app, method, path, **kwargs))


def post_json(app: ASGIApp, path: str, payload: object, **headers: str) -> Answer:
    return call(
        app,
        "POST",
        path,
        headers={"content-type": "application/json", **headers},
        body=json.dumps(payload).encode(),
    )
