"""The start-up lines: each door's links, with ``?token=…`` only on what a browser opens.

With a token, a link is printed with ``?token=…`` when it is a page: its label does not
say POST and a GET of it, asked once through the whole app (guard included) as a browser
would, answers 200 with ``text/html``. Every other link is printed bare, and one line
says that API calls send ``Authorization: Bearer <token>`` (a POST with a token in its
URL is refused).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, Awaitable, Callable, MutableMapping

from onedoor import AsgiMount

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]

POST_LABEL = re.compile(r"\bPOST\b")
PROBE_SECONDS = 5.0
TOKEN_HINT = "?token=…"
BEARER_LINE = ("onedoor: a token is required: open the ?token=… pages in a browser; "
               'API calls send the header "Authorization: Bearer <token>"')


async def answers_a_page(app: ASGIApp, path: str, token: str, port: int) -> bool:
    """Does GET ``path`` (with the token) answer 200 and HTML? Gives up after PROBE_SECONDS."""
    raw_path, _, query = path.partition("?")
    scope: Scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": "GET", "scheme": "http", "path": raw_path, "raw_path": raw_path.encode(),
        "query_string": query.encode(), "root_path": "", "client": ("127.0.0.1", 0), "server": ("127.0.0.1", port),
        "headers": [(b"host", f"127.0.0.1:{port}".encode()), (b"accept", b"text/html"),
                    (b"authorization", f"Bearer {token}".encode())],
        "state": {},
    }  # fmt: skip
    started: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
    asked = False

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return {"type": "http.disconnect"}  # a stream stops at once

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start" and not started.done():
            kind = next((v for k, v in message.get("headers", ()) if k.lower() == b"content-type"), b"")
            started.set_result((message["status"], kind))

    task: asyncio.Future[Any] = asyncio.ensure_future(app(scope, receive, send))
    either: list[asyncio.Future[Any]] = [task, started]
    try:
        await asyncio.wait(either, timeout=PROBE_SECONDS, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)  # a failing route is simply not a page
    if not started.done():
        return False
    status, kind = started.result()
    return status == 200 and kind.split(b";", 1)[0].strip().lower() == b"text/html"


async def door_lines(app: ASGIApp, doors: list[Any], mounts: list[AsgiMount], base: str, port: int,
                     token: str | None) -> list[str]:
    """One line per door; ``token``: one accepted token (the server requires one), else None."""
    pages: dict[str, bool] = {}
    lines = []
    for door, mount in zip(doors, mounts):
        links = mount.links or [("endpoint", mount.prefix.rstrip("/") + "/")]
        shown = []
        for label, path in links:
            url = base + path
            if token is not None and not POST_LABEL.search(label):
                if path not in pages:
                    pages[path] = await answers_a_page(app, path, token, port)
                if pages[path]:
                    url += TOKEN_HINT
            shown.append(f"{label} {url}")
        lines.append(f"onedoor:   {door.name:<6} {', '.join(shown)}")
    if token is not None:
        lines.append(BEARER_LINE)
    return lines


__all__ = ["BEARER_LINE", "answers_a_page", "door_lines"]
