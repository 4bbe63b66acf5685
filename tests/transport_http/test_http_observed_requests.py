"""Request observers (``onedoor_request_started`` / ``_finished``): every request the guard
lets through is one observed request, with its door, method, principal and W3C trace
headers, and the runs it starts are inside it; a refused request is not; a server with no
request observer has no such layer. Real uvicorn, a pluggy hook relay."""

from __future__ import annotations

import contextvars
import json

import httpx
import pluggy
from onedoor import hookspecs
from onedoor.composition import AsgiMount, ServeContext
from onedoor.hookspecs import hookimpl
from onedoor.testing import scripted_kernel
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.app import build_app
from onedoor_transport_http.observing import ObservedRequests
from onedoor_transport_http.testing import ThreadedServer

TOKEN = "observed-token-0123456789abcdef"
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
CURRENT: contextvars.ContextVar[str] = contextvars.ContextVar("current_request", default="")


class Observer:
    def __init__(self) -> None:
        self.started: list = []
        self.finished: list = []
        self.runs: list = []

    @hookimpl
    def onedoor_request_started(self, request):
        self.started.append(request)
        request.scratch["token"] = CURRENT.set(f"{request.method} #{len(self.started)}")

    @hookimpl
    def onedoor_request_finished(self, request, error):
        self.finished.append((request, error))
        CURRENT.reset(request.scratch.pop("token"))

    @hookimpl
    def onedoor_run_started(self, run):
        self.runs.append((run.run_id, CURRENT.get()))


class RunDoor:
    """``/runner``: one run per request, answered with its reply; ``/runner/boom`` raises."""

    name = "runner"
    shapes = frozenset({"asgi"})

    def asgi_mount(self, ctx):
        async def app(scope, receive, send):
            if scope["type"] != "http":
                return
            if scope["path"].endswith("/boom"):
                raise RuntimeError("the door broke")
            async with ctx.kernel.run("hello", door=self.name) as run:
                events = [event async for event in run]
            body = json.dumps({"reply": events[-1].text, "run_id": events[-1].run_id}).encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})

        return AsgiMount(app=app, prefix="/runner")


class SelfObservingDoor:
    """``/own``: wraps each request in ``observed_request`` itself (method ``Custom``)."""

    name = "own"
    shapes = frozenset({"asgi"})
    observes_requests = True

    def asgi_mount(self, ctx):
        from onedoor.observe import observed_request

        async def app(scope, receive, send):
            if scope["type"] != "http":
                return
            async with observed_request(ctx.hooks, door=self.name, transport="http", method="Custom"):
                await send({"type": "http.response.start", "status": 204, "headers": []})
                await send({"type": "http.response.body", "body": b""})

        return AsgiMount(app=app, prefix="/own")


def serve(observer) -> ThreadedServer:
    pm = pluggy.PluginManager("onedoor")
    pm.add_hookspecs(hookspecs)
    if observer is not None:
        pm.register(observer)
    ctx = ServeContext(kernel=scripted_kernel(hooks=pm.hook), door_names=["runner", "own"], transport_name="http",
                       hooks=pm.hook)
    return ThreadedServer([RunDoor(), SelfObservingDoor()], ctx, HttpOptions(port=0, token=TOKEN))


def test_each_request_the_guard_lets_through_is_observed_with_its_runs_inside():
    observer = Observer()
    with serve(observer) as server, httpx.Client(base_url=server.base_url, timeout=30) as client:
        auth = {"authorization": f"Bearer {TOKEN}"}
        reply = client.post("/runner/go", json={}, headers={**auth, "traceparent": TRACEPARENT, "tracestate": "a=b",
                                                              "x-other": "not trace context"})
        assert reply.status_code == 200, reply.text
        assert client.post("/runner/go", json={}).status_code == 401  # refused by the guard: not observed
        assert client.get("/healthz").status_code == 200
        assert client.get("/own/x", headers=auth).status_code == 204
        assert client.get("/nowhere/abc123", headers=auth).status_code == 404
        assert client.post("/runner/boom", json={}, headers=auth).status_code == 500  # the door raised
    first, health, own, nowhere, boom = observer.started
    assert (nowhere.door, nowhere.method) == ("http", "GET (no route)"), "a random path makes no random name"
    assert (own.door, own.method) == ("own", "Custom"), "a door that observes itself is observed once, by itself"
    assert (first.door, first.transport, first.method, first.principal) == ("runner", "http", "POST /runner/go", "local")
    assert first.meta == {"traceparent": TRACEPARENT, "tracestate": "a=b"}
    assert (health.door, health.method, health.meta) == ("http", "GET /healthz", {})
    assert [error for _, error in observer.finished] == [None, None, None, None, "RuntimeError: the door broke"]
    assert observer.runs == [(reply.json()["run_id"], "POST /runner/go #1")], "the run is inside its request"


def test_no_request_observer_no_layer():
    with serve(None) as server, httpx.Client(base_url=server.base_url) as client:
        assert client.get("/healthz").status_code == 200
    pm = pluggy.PluginManager("onedoor")
    pm.add_hookspecs(hookspecs)
    ctx = ServeContext(kernel=scripted_kernel(hooks=pm.hook), door_names=["runner"], transport_name="http", hooks=pm.hook)

    def layers(app) -> list[str]:
        found = []
        while app is not None:
            found.append(type(app).__name__)
            app = getattr(app, "app", None)
        return found

    bare, _ = build_app([RunDoor()], ctx, HttpOptions(port=0))
    assert ObservedRequests.__name__ not in layers(bare)
    pm.register(Observer())
    observed, _ = build_app([RunDoor()], ctx, HttpOptions(port=0))
    assert ObservedRequests.__name__ in layers(observed)
