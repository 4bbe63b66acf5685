"""Run the shared app on uvicorn: start-up lines, graceful shutdown that cancels runs.

On start it prints ``onedoor: listening on http://HOST:PORT`` and then one line per door
with its URL(s), after the socket is bound (so ``--port 0`` prints the real port).
On SIGINT/SIGTERM every run in flight is cancelled first, so streaming clients get
their door's cancelled ending instead of a cut connection; then uvicorn drains.
"""

from __future__ import annotations

import sys
from typing import Any

from . import HttpOptions
from .app import build_app


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
            suffix = "?token=…" if options.token else ""
            lines = [f"onedoor: listening on {base} (backend {kernel.backend.name!r}; Ctrl-C stops)"]
            for door, mount in zip(doors, mounts):
                links = mount.links or [("endpoint", mount.prefix.rstrip("/") + "/")]
                shown = ", ".join(f"{label} {base}{path}{suffix if path.endswith('/') else ''}" for label, path in links)
                lines.append(f"onedoor:   {door.name:<6} {shown}")
            print("\n".join(lines), flush=True)

        def handle_exit(self, sig: int, frame: Any) -> None:
            kernel.cancel_all()
            super().handle_exit(sig, frame)

    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        log_level=options.log_level,
        timeout_graceful_shutdown=max(1, int(options.shutdown_grace)),
        lifespan="on",
        access_log=False,
        server_header=False,
    )
    server = Server(config)
    try:
        server.run()
    except KeyboardInterrupt:
        return 130
    except OSError as exc:
        print(f"onedoor: error: cannot listen on {options.host}:{options.port}: {exc}", file=sys.stderr)
        return 2
    except SystemExit:
        # uvicorn logs a failed bind or lifespan start-up and calls sys.exit(3): say what
        # happened in onedoor's one-line form and exit 2 like every other start-up error.
        if server.started:
            raise
        print(f"onedoor: error: {_why_not_started(options.host, options.port)}", file=sys.stderr)
        return 2
    return 0 if server.started else 2


def _why_not_started(host: str, port: int) -> str:
    """Probe the address uvicorn could not use, for a clear message."""
    import socket

    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return f"the HTTP server on {host}:{port} did not start (a door's start-up failed; see above)"
