"""Run the shared app on uvicorn: start-up lines, graceful shutdown that cancels runs.

On start it binds the socket itself (a port in use is one line, ``onedoor: error: cannot
listen on …``, naming the busy port and how to choose another, and exit 2), then prints
``onedoor: listening on http://HOST:PORT`` and one line per door with its URL(s) (so
``--port 0`` prints the real port); with a token, ``?token=…`` only on the pages a
browser opens (see :mod:`.links`).

On SIGINT/SIGTERM it stops accepting connections and drains: the kernel starts no new
run (a request on a connection already open is answered 503 ``draining``, and ``/readyz``
503), and the runs going on get ``drain_grace`` seconds to finish (0 by default: none).
Then it cancels every run still in flight, so that each open stream gets its door's
cancelled ending, within ``shutdown_grace`` seconds: a backend gets half of it (at most
the kernel's ``cancel_grace``) to stop, and a backend that ignores the cancel is left
behind (its worker thread dies with the process). Then uvicorn closes the connections and
the process exits: 0 after SIGTERM, 130 after Ctrl-C.
"""

from __future__ import annotations

import asyncio
import errno
import math
import signal
import socket
import sys
from typing import Any

from . import HttpOptions
from .app import build_app
from .links import door_lines


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def run_server(doors: list[Any], ctx: Any, options: HttpOptions) -> int:
    import uvicorn

    app, mounts = build_app(doors, ctx, options)
    kernel = ctx.kernel

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.should_exit:
                return
            port = options.port
            for server in getattr(self, "servers", []):
                for sock in server.sockets:
                    port = sock.getsockname()[1]
                    break
            base = _url(options.host, port)
            token = next(iter(options.principals()), None) if options.requires_token else None
            lines = [f"onedoor: listening on {base} (backend {kernel.backend.name!r}; Ctrl-C stops)"]
            lines += await door_lines(app, doors, mounts, base, port, token)
            if options.oauth_issuer:
                shown = options.public_url.rstrip("/") or base
                lines.append(f"onedoor: OAuth: access tokens of {options.oauth_issuer} accepted too; "
                             f"metadata at {shown}/.well-known/oauth-protected-resource[/<door prefix>]")
            print("\n".join(lines), flush=True)

        async def shutdown(self, sockets: Any = None) -> None:
            # The runs first: they finish (drain) or get their endings while uvicorn stops
            # accepting and waits for the connections to close.
            kernel.drain()
            stopping = asyncio.ensure_future(_drain_then_stop(kernel, options))
            try:
                await super().shutdown(sockets=sockets)
            finally:
                await stopping

    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        log_level=options.log_level,
        timeout_graceful_shutdown=max(1, math.ceil(options.drain_grace + options.shutdown_grace)),
        lifespan="on",
        access_log=False,
        server_header=False,
    )
    try:
        listener = _listen(options.host, options.port)
    except OSError as exc:
        why = _why(exc, options.port)
        print(f"onedoor: error: cannot listen on {options.host}:{options.port}: {why}", file=sys.stderr)
        return 2
    server = Server(config)
    try:
        with _ExitQuietlyOnSigterm():
            server.run(sockets=[listener])
    except KeyboardInterrupt:
        return 130
    except SystemExit:
        if server.started:
            raise
    finally:
        listener.close()
    if not server.started:
        # A door's start-up (the app's lifespan) failed; uvicorn has logged why.
        print(f"onedoor: error: the HTTP server on {options.host}:{options.port} did not start "
              "(a door's start-up failed; see above)", file=sys.stderr)
        return 2
    return 0


async def _drain_then_stop(kernel: Any, options: HttpOptions) -> None:
    """Let the runs going on finish within ``drain_grace``, then cancel the rest."""
    if options.drain_grace > 0:
        await kernel.drained(options.drain_grace)
    await kernel.shutdown(options.shutdown_grace)


def _why(exc: OSError, port: int) -> str:
    """Why the socket could not be bound, and for a busy port how to choose another."""
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} is in use; choose another with --port N, or --port 0 for any free one"
    return str(exc.strerror or exc)


def _listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound (uvicorn listens on it), as uvicorn would bind it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: uvloop does not set TCP_NODELAY on connections of
        # a server made from a socket, and without it a response's body waits for the ACK
        # of its headers (Nagle against the client's delayed ACK: ~40 ms a request)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    return sock


class _ExitQuietlyOnSigterm:
    """uvicorn re-raises the signal that stopped it once it has shut down; for SIGTERM
    that would kill the process (status -15) after a clean shutdown. While the server
    runs, SIGTERM's handler is one that does nothing, so a clean shutdown exits 0."""

    installed = False

    def __enter__(self) -> None:
        try:
            self.previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
        except ValueError:  # not the main thread: uvicorn does not handle signals either
            return
        self.installed = True

    def __exit__(self, *exc: Any) -> None:
        if self.installed:
            signal.signal(signal.SIGTERM, self.previous)
