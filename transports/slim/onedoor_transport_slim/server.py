"""The worker: listen as a SLIM name, give each incoming session to the door.

Each session is served inside :func:`onedoor.observe.observed_request` (method
``session``, meta: the W3C trace context in the session's metadata), so the runs of a
session are inside it for an observer; it costs nothing when nobody observes requests.

Several workers (separate processes, each its own SLIM identity) may serve the same
name; the node spreads new sessions across them.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

from onedoor import ServeContext
from onedoor.observe import observed, observed_request, trace_meta

from . import bindings
from .channel import SlimChannel, refusal_notice
from .options import SlimOptions


def _log(text: str) -> None:
    print(f"onedoor slim: {text}", file=sys.stderr, flush=True)


class Worker:
    def __init__(self, door: Any, ctx: ServeContext, options: SlimOptions, secret: str) -> None:
        self.door = door
        self.ctx = ctx
        self.options = options
        self.secret = secret
        self.channels: set[SlimChannel] = set()
        self.tasks: set[asyncio.Task] = set()
        self.stop = asyncio.Event()

    async def run(self) -> int:
        options = self.options
        sb = bindings.slim(options.log_level)
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
        mls = "MLS on" if options.mls else "MLS OFF"
        node = "embedded node" if options.embed_node else "node"
        _log(f"serving door {self.door.name!r} as {options.name} via {node} {options.endpoint} ({mls})")
        accept = asyncio.create_task(self._accept(app, sb))
        stopper = asyncio.create_task(self.stop.wait())
        watch = asyncio.create_task(self._watch_node(identity))
        await asyncio.wait({accept, stopper, watch}, return_when=asyncio.FIRST_COMPLETED)
        code = 0
        failure = accept.exception() if accept.done() and not accept.cancelled() else None
        if failure is not None:
            _log(f"stopped: {bindings.describe_error(failure)}")
            code = 1
        if watch.done() and not watch.cancelled():
            _log(watch.result())
            code = 1
        for task in (accept, stopper, watch):
            task.cancel()
        await self._shutdown(app, name, conn, service)
        if node_service is not None:
            bindings.stop_node(node_service, options)
        _log("stopped")
        return code

    async def _watch_node(self, identity: Any) -> str:
        return await watch_node(self.options, identity)

    async def _accept(self, app: Any, sb: Any) -> None:
        while True:
            session = await app.listen_for_session_async(None)
            peer = _peer(session)
            if self.options.mls and session.config().mls_settings is None:
                _log(f"refused a session without MLS from {peer} (this worker requires MLS; -o mls=false allows it)")
                self._refuse(app, session, "this worker requires MLS (it runs without MLS only with -o mls=false)")
                continue
            if len(self.channels) >= self.options.max_sessions:
                _log(f"refused a session from {peer}: {len(self.channels)} sessions open (max_sessions)")
                self._refuse(app, session, f"this worker serves at most {self.options.max_sessions} sessions at once")
                continue
            channel = SlimChannel(
                session,
                app,
                peer=peer,
                max_message_bytes=self.options.max_message_bytes,
                probe_interval=self.options.probe_interval,
                probe_timeout=self.options.probe_timeout,
            )
            self.channels.add(channel)
            if self.options.log_sessions:
                _log(f"session from {peer} opened")
            task = asyncio.create_task(self._serve(channel))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    def _refuse(self, app: Any, session: Any, reason: str) -> None:
        """Tell the client why (a notice it turns into its own error), then drop the session."""

        async def refuse() -> None:
            try:
                await asyncio.wait_for(session.publish_async(refusal_notice(reason), None, None), 2.0)
            except Exception:  # noqa: BLE001 - the client then sees the session dropped
                pass
            try:
                await asyncio.wait_for(app.delete_session_async(session), 5.0)
            except Exception:  # noqa: BLE001 - already gone
                pass

        task = asyncio.create_task(refuse())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _serve(self, channel: SlimChannel) -> None:
        try:
            hooks = self.ctx.hooks
            meta = trace_meta(session_metadata(channel.session)) if observed(hooks, "onedoor_request_started") else {}
            async with observed_request(hooks, door=self.door.name, transport="slim", method="session", meta=meta):
                await self.door.serve_channel(channel, self.ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one session's failure is not the worker's
            _log(f"session with {channel.peer} failed: {type(exc).__name__}: {exc}")
        finally:
            if channel.error:
                _log(channel.error)
            elif self.options.log_sessions:
                _log(f"session from {channel.peer} closed")
            self.channels.discard(channel)
            await channel.close()

    async def _shutdown(self, app: Any, name: Any, conn: int, service: Any) -> None:
        try:
            await asyncio.wait_for(app.unsubscribe_async(name, conn), 1.0)
        except Exception:  # noqa: BLE001
            pass
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=3.0)
        try:
            service.disconnect(conn)
        except Exception:  # noqa: BLE001
            pass


def stop_on_signals(stop: asyncio.Event) -> None:
    """SIGINT and SIGTERM set ``stop`` (where the loop can take signal handlers)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError, ValueError):
            pass


async def watch_node(options: SlimOptions, identity: Any) -> str:
    """Return (ending the worker) once the node is gone or was replaced: SLIM gives up
    reconnecting quickly and a restarted node has lost the worker's subscription, so a
    supervisor should restart the worker. Never returns with an embedded node or with
    ``node_check_interval=0``."""
    interval = options.node_check_interval
    if interval <= 0 or options.embed_node:
        await asyncio.Event().wait()
    while True:
        await asyncio.sleep(interval)
        problem = await asyncio.to_thread(bindings.node_lost, options.endpoint, identity, options.connect_timeout)
        if problem:
            return f"lost the SLIM node at {options.endpoint} ({problem}); stopping so a supervisor can restart this worker"


def session_metadata(session: Any) -> dict[str, str]:
    """The metadata the client opened the session with (W3C trace context, say); {} if none."""
    try:
        return dict(session.metadata() or {})
    except Exception:  # noqa: BLE001 - a session without metadata
        return {}


def _peer(session: Any) -> str:
    try:
        return str(session.destination())
    except Exception:  # noqa: BLE001
        return "slim-peer"


def serve(door: Any, ctx: ServeContext, options: SlimOptions, secret: str) -> int:
    bindings.protect_stdout()  # SLIM's native logs write to fd 1: send them to stderr
    return asyncio.run(Worker(door, ctx, options, secret).run())
