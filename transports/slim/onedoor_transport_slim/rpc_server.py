"""The worker for an ``rpc`` door: a slimrpc server listening as a SLIM name.

The door registers its services on the server (``door.register_rpc(server, ctx)``,
gRPC-style ``add_<Service>Servicer_to_server``); slimrpc then takes every session that
reaches this app and dispatches each call by its method path. A2A over SLIM is slima2a's
A2A service served this way.

Facts it relies on (slim-bindings 3.3.8): slimrpc calls the Python handlers from Rust
threads, so the running loop is handed to the bindings first (``uniffi_set_event_loop``);
the server takes the app's whole notification receiver, so the app serves nothing else;
slimrpc opens every session with MLS, on both sides, and has no setting to turn it off.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from onedoor import OptionsError, ServeContext

from . import bindings
from .options import SlimOptions
from .server import stop_on_signals, watch_node

RPC_BINDING = "slimrpc"
ADDRESS_KEY = "rpc.address"  # ctx.extras: the SLIM name the door is served as
BINDING_KEY = "rpc.binding"  # ctx.extras: "slimrpc"
SHUTDOWN_GRACE = 3.0  # seconds runs in flight get to end (cancelled) before the server stops
SESSION_CLOSE_WAIT = 3.0  # seconds the server gets to close its sessions


def _log(text: str) -> None:
    print(f"onedoor slim: {text}", file=sys.stderr, flush=True)


def check_mls(door: Any, options: SlimOptions) -> None:
    """slimrpc always uses MLS: refuse ``mls=false`` rather than pretend to honour it."""
    if not options.mls:
        raise OptionsError(
            f"door {door.name!r} is served over slimrpc, which always uses MLS end-to-end encryption: "
            "-o mls=false cannot apply to it (drop the option)"
        )


class RpcWorker:
    def __init__(self, door: Any, ctx: ServeContext, options: SlimOptions, secret: str) -> None:
        self.door = door
        self.ctx = ctx
        self.options = options
        self.secret = secret
        self.stop = asyncio.Event()
        self._serving: asyncio.Task[Any] | None = None

    async def run(self) -> int:
        options = self.options
        sb = bindings.slim(options.log_level)
        sb.uniffi_set_event_loop(asyncio.get_running_loop())  # slimrpc calls back into this loop
        stop_on_signals(self.stop)
        node_service = None
        if options.embed_node:
            node_service = await bindings.start_node(sb, options)
            service = sb.create_service("onedoor-worker")  # an app must not use its own node's service
        else:
            service = sb.get_global_service()
        conn = await bindings.connect(sb, service, options)
        identity = bindings.node_identity(options.endpoint)
        app = bindings.make_app(sb, service, options.name, self.secret)
        name = sb.Name.from_string(options.name)
        await app.subscribe_async(name, conn)
        server = sb.Server.new_with_connection(app, name, conn)
        self.ctx.extras[ADDRESS_KEY] = options.name
        self.ctx.extras[BINDING_KEY] = RPC_BINDING
        try:
            self.door.register_rpc(server, self.ctx)
        except Exception:
            await self._leave(app, name, conn, service, node_service)
            raise
        node = "embedded node" if options.embed_node else "node"
        _log(f"serving door {self.door.name!r} as {options.name} via {node} {options.endpoint} (slimrpc, MLS on)")
        code = await self._serve(server, identity)
        await self._stop_server(server)
        await self._leave(app, name, conn, service, node_service)
        _log("stopped")
        return code

    async def _serve(self, server: Any, identity: Any) -> int:
        """Serve until a signal, a server failure or the loss of the node; the exit code."""
        serving = asyncio.create_task(server.serve_async())
        stopper = asyncio.create_task(self.stop.wait())
        watch = asyncio.create_task(watch_node(self.options, identity))
        await asyncio.wait({serving, stopper, watch}, return_when=asyncio.FIRST_COMPLETED)
        code = 0
        if serving.done() and not serving.cancelled():
            failure = serving.exception()
            _log(f"stopped: {bindings.describe_error(failure)}" if failure else "stopped: the RPC server ended")
            code = 1
        if watch.done() and not watch.cancelled():
            _log(watch.result())
            code = 1
        for task in (stopper, watch):
            task.cancel()
        self._serving = serving
        return code

    async def _stop_server(self, server: Any) -> None:
        """Runs in flight end cancelled (their backends told), then the server stops."""
        cancelled = await self.ctx.kernel.shutdown(SHUTDOWN_GRACE)
        if cancelled:
            _log(f"cancelled {cancelled} run(s) in flight")
        try:
            await asyncio.wait_for(server.shutdown_async(), SESSION_CLOSE_WAIT)
        except TimeoutError:  # slimrpc waits up to 10 s for each gone peer to acknowledge the close
            _log(f"some sessions did not close within {SESSION_CLOSE_WAIT:.0f} s (their peers are gone); leaving them")
        except Exception as exc:  # noqa: BLE001 - stopping anyway
            _log(f"the RPC server did not shut down cleanly: {bindings.describe_error(exc)}")
        serving = self._serving
        if serving is not None:
            if not serving.done():
                serving.cancel()
            await asyncio.wait({serving}, timeout=2.0)

    async def _leave(self, app: Any, name: Any, conn: int, service: Any, node_service: Any) -> None:
        try:
            await asyncio.wait_for(app.unsubscribe_async(name, conn), 1.0)
        except Exception:  # noqa: BLE001 - the node may be gone already
            pass
        try:
            service.disconnect(conn)
        except Exception:  # noqa: BLE001 - already disconnected
            pass
        if node_service is not None:
            bindings.stop_node(node_service, self.options)


def serve(door: Any, ctx: ServeContext, options: SlimOptions, secret: str) -> int:
    check_mls(door, options)
    bindings.protect_stdout()  # SLIM's native logs write to fd 1: send them to stderr
    try:
        return asyncio.run(RpcWorker(door, ctx, options, secret).run())
    finally:
        bindings.slim(options.log_level).uniffi_set_event_loop(None)  # the loop is closed: back to the default
