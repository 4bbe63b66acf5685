"""A webhook for the push-notification tests: a real HTTP server on 127.0.0.1 (port 0)
recording every POST it takes. (A uniquely named module: conftest puts this folder on
sys.path.)"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL = ("TASK_STATE_COMPLETED", "TASK_STATE_CANCELED", "TASK_STATE_FAILED")


class Webhook:
    """A webhook on 127.0.0.1: keeps (path, headers, JSON body) of each POST it took; the
    first ``refuse`` POSTs to a path get 503, and every POST to a path in ``always`` gets
    the status named there (each counted in ``refused``)."""

    def __init__(self, refuse: int = 0, always: dict[str, int] | None = None) -> None:
        self.posts: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.refused: dict[str, int] = {}
        hook, statuses = self, dict(always or {})

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.path in statuses or hook.refused.get(self.path, 0) < refuse:
                    hook.refused[self.path] = hook.refused.get(self.path, 0) + 1
                    self.send_response(statuses.get(self.path, 503))
                    self.send_header("Retry-After", "0")
                else:
                    hook.posts.append((self.path, dict(self.headers), json.loads(body)))
                    self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def bodies(self, path: str) -> list[dict[str, Any]]:
        return [body for p, _, body in self.posts if p == path]

    def ended(self, path: str) -> bool:
        return any(state(body) in FINAL for body in self.bodies(path))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def state(body: dict[str, Any]) -> str:
    for kind in ("statusUpdate", "task"):
        if kind in body:
            return str(body[kind]["status"]["state"])
    return ""


__all__ = ["FINAL", "Webhook", "state"]
