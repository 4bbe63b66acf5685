"""Benchmark: A2A over SLIM (slimrpc, unix socket, MLS on) against A2A over HTTP (JSON-RPC).

In one run: a SLIM node (`onedoor slim-node`), `onedoor serve --door a2a --transport slim`
and `onedoor serve --door a2a --transport http`, both with the scripted backend answering
a fixed short text. In this process, AGNTCY's slima2a client (slimrpc) and a2a-sdk's
JSON-RPC client take turns, call for call, on one event loop:

- ``slim_send_ms`` / ``http_send_ms``: median round trip of ``SendMessage`` (a task run
  to completion, the Task returned); their ratio is the target (<= 2);
- ``slim_stream_ms`` / ``http_stream_ms``: median time of a ``SendStreamingMessage`` read
  to its last event.

Needs slima2a (it pins a2a-sdk==1.2.3): run it from an environment that has it.

    python bench/bench_a2a_slim.py [--quick]

The last stdout line is one JSON object: {"name", "metrics", "ratios"}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPLY = "pong"
SECRET = "onedoor-bench-slim-secret-0123456789abcdef"
NAME = "agntcy/onedoor/agent"
BACKEND = ["-o", f"scripted.reply={REPLY}", "-o", "scripted.tool=false", "-o", "scripted.reasoning=false"]


def onedoor(*args: str) -> list[str]:
    return [sys.executable, "-m", "onedoor", *args]


def start(argv: list[str], needle: str, log: Path, timeout: float = 30.0) -> subprocess.Popen:
    env = {**os.environ, "ONEDOOR_SLIM_SECRET": SECRET, "PYTHONUNBUFFERED": "1"}
    with open(log, "wb") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in log.read_text(errors="replace"):
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{argv[3:5]} did not start ({needle!r} not seen): {log.read_text(errors='replace')[-2000:]}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def request(text: str) -> Any:
    from a2a.helpers import new_text_message
    from a2a.types import Role, SendMessageRequest

    return SendMessageRequest(message=new_text_message(text, role=Role.ROLE_USER))


async def timed(client: Any, text: str) -> float:
    """Seconds from sending to the last event of the reply."""
    started = time.perf_counter()
    last = None
    async for event in client.send_message(request(text)):
        last = event
    elapsed = time.perf_counter() - started
    if last is None:
        raise RuntimeError("no reply")
    return elapsed


async def slim_clients(endpoint: str, http: Any) -> tuple[Any, Any, Any]:
    """(unary, streaming, a function that disconnects) of slima2a's client for the agent at NAME."""
    import slim_bindings as sb
    from a2a.client import minimal_agent_card
    from onedoor_transport_slim import bindings
    from slima2a import connect_and_subscribe
    from slima2a.client_transport import ClientConfig, MultiAgentClientFactory, slimrpc_channel_factory

    bindings.slim("error")
    sb.uniffi_set_event_loop(asyncio.get_running_loop())
    org, namespace, _ = NAME.split("/")
    me = f"bench-{uuid.uuid4().hex[:8]}"
    service = sb.create_service(me)
    app, conn = await connect_and_subscribe(service, sb.Name(org, namespace, me), slim_url=endpoint, secret=SECRET)

    def client(streaming: bool) -> Any:
        config = ClientConfig(supported_protocol_bindings=["slimrpc"], streaming=streaming, httpx_client=http,
                              slimrpc_channel_factory=slimrpc_channel_factory(app, conn))
        card = minimal_agent_card(NAME, ["slimrpc"])
        card.capabilities.streaming = True
        return MultiAgentClientFactory(config).create(card=card)

    return client(False), client(True), lambda: service.disconnect(conn)


async def http_clients(base: str, http: Any) -> tuple[Any, Any]:
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

    card = await A2ACardResolver(http, base).get_agent_card()

    def client(streaming: bool) -> Any:
        config = ClientConfig(httpx_client=http, streaming=streaming, supported_protocol_bindings=["JSONRPC"])
        return ClientFactory(config).create(card)

    return client(False), client(True)


def sb_loop_reset() -> None:
    import slim_bindings as sb

    sb.uniffi_set_event_loop(None)  # this loop ends here


async def measure(endpoint: str, base: str, calls: int, warmup: int) -> dict[str, float]:
    import httpx

    times: dict[str, list[float]] = {"slim_send": [], "http_send": [], "slim_stream": [], "http_stream": []}
    async with httpx.AsyncClient(timeout=30) as http:
        slim_unary, slim_stream, disconnect = await slim_clients(endpoint, http)
        http_unary, http_stream = await http_clients(base, http)
        pairs = {"slim_send": slim_unary, "http_send": http_unary, "slim_stream": slim_stream, "http_stream": http_stream}
        for index in range(warmup + calls):
            for key, client in pairs.items():  # call for call, so both sides see the same machine
                elapsed = await timed(client, f"call {index}")
                if index >= warmup:
                    times[key].append(elapsed)
        disconnect()
        sb_loop_reset()
    return {key: statistics.median(values) * 1000 for key, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls (under 20 s)")
    args = parser.parse_args()
    calls, warmup = (30, 5) if args.quick else (300, 30)
    import importlib.util

    missing = [name for name in ("slima2a", "onedoor_door_a2a", "onedoor_transport_slim")
               if importlib.util.find_spec(name) is None]
    if missing:  # slima2a pins a2a-sdk==1.2.3: it has an environment of its own (nox tests(slim-a2a))
        print(json.dumps({"name": "a2a-slim", "skipped": f"not installed here: {', '.join(missing)} "
                          "(pip install 'onedoor-door-a2a[slim]')"}))
        return

    root = Path(tempfile.mkdtemp(prefix="odbench-a2a-", dir="/tmp"))
    endpoint = f"unix://{root}/node.sock"
    procs: list[subprocess.Popen] = []
    try:
        procs.append(start(onedoor("slim-node", "--endpoint", endpoint), "listening on", root / "node.log"))
        argv = onedoor("serve", "--door", "a2a", "--transport", "slim", "-o", f"endpoint={endpoint}", *BACKEND)
        procs.append(start(argv, "serving door", root / "slim-worker.log"))
        port = free_port()
        argv = onedoor("serve", "--door", "a2a", "--transport", "http", "--port", str(port), *BACKEND)
        procs.append(start(argv, "listening on", root / "http.log"))
        medians = asyncio.run(measure(endpoint, f"http://127.0.0.1:{port}/a2a", calls, warmup))
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(root, ignore_errors=True)
    metrics = {f"{key}_ms": round(value, 3) for key, value in medians.items()}
    ratios = {
        "slim_send_vs_http": {"value": round(medians["slim_send"] / medians["http_send"], 3), "target": "<= 2"},
        "slim_stream_vs_http": {"value": round(medians["slim_stream"] / medians["http_stream"], 3)},
    }
    print(json.dumps({"name": "a2a-slim", "metrics": metrics, "ratios": ratios}))


if __name__ == "__main__":
    main()
