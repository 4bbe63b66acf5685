"""`onedoor slim-node`: a SLIM node for one host, on a unix socket by default.

A unix socket (in a 0700 runtime directory, the socket itself 0600) keeps the node
private to this user and avoids TCP's extra ~90 ms per request (slim-bindings leaves
Nagle's algorithm on). Use http(s)://host:port to let workers on other hosts in.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from . import bindings
from .options import SlimOptions


async def _run(options: SlimOptions) -> int:
    sb = bindings.slim(options.log_level)
    service = await bindings.start_node(sb, options)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"onedoor slim-node: listening on {options.endpoint}", file=sys.stderr, flush=True)
    await stop.wait()
    bindings.stop_node(service, options)
    print("onedoor slim-node: stopped", file=sys.stderr, flush=True)
    return 0


def run_node(options: SlimOptions) -> int:
    bindings.protect_stdout()  # SLIM's native logs write to fd 1: send them to stderr
    return asyncio.run(_run(options))
