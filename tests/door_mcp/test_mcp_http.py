"""The MCP door over streamable HTTP: `onedoor serve --door mcp --transport http` (a real
subprocess) with the Python SDK client and raw HTTP, and the door's app alone on uvicorn."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.timeout(90)

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


def sse_messages(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]


async def test_sdk_client_calls_ask(sdk: Any, http_server: Any) -> None:
    async with sdk.http(http_server.url) as session:
        tools = (await session.list_tools()).tools
        result = await session.call_tool("ask", {"message": "over http"})
        failed = await session.call_tool("ask", {"message": "/fail now"})
    assert [t.name for t in tools] == ["ask"]
    assert sdk.text(result) == "You said: over http (2 words, turn 1)" and not sdk.error(result)
    assert sdk.error(failed) and "failed" in sdk.text(failed)


async def test_progress_reaches_the_client_over_http(sdk: Any, http_server: Any) -> None:
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with sdk.http(http_server.url) as session:
        result = await session.call_tool("ask", {"message": "stream me please"}, progress_callback=on_progress)
    texts = [m for m in seen if not m.startswith("[tool ")]
    assert texts and "".join(texts) == sdk.text(result)
    assert any(m.startswith("[tool word_count") for m in seen)


async def test_concurrent_sessions_do_not_mix(sdk: Any, http_server: Any) -> None:
    async def one(word: str) -> str:
        async with sdk.http(http_server.url) as session:
            return sdk.text(await session.call_tool("ask", {"message": word}))

    replies = await asyncio.gather(*(one(f"word{i}") for i in range(4)))
    assert replies == [f"You said: word{i} (1 word, turn 1)" for i in range(4)]


def _initialize(client: httpx.Client, url: str, headers: dict[str, str] | None = None) -> str:
    response = client.post(url, json=INIT, headers={**ACCEPT, **(headers or {})})
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    note = client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                       headers={**ACCEPT, "mcp-session-id": session, **(headers or {})})
    assert note.status_code == 202
    return session


def test_cancel_over_http_stops_the_backend(http_server: Any, outcomes: Any) -> None:
    with httpx.Client(timeout=30, follow_redirects=True) as client:
        session = _initialize(client, http_server.url)
        headers = {**ACCEPT, "mcp-session-id": session}
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "ask", "arguments": {"message": "/slow /long 400 cancel me"}, "_meta": {"progressToken": "c"}}}
        got: list[dict[str, Any]] = []
        with client.stream("POST", http_server.url, json=call, headers=headers) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:") and line[5:].strip():
                    got.append(json.loads(line[5:]))
                    break  # the run is streaming
            cancel = client.post(http_server.url, headers=headers,
                                 json={"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
            assert cancel.status_code == 202
        assert got[0]["method"] == "notifications/progress"
    record = outcomes.wait_for(lambda r: r["message"].startswith("/slow /long 400"))
    assert record["stop_reason"] == "cancelled" and record["workers_alive"] == 0
    assert record["door"] == "mcp"


@pytest.mark.parametrize(
    "headers, status",
    [
        ({"host": "evil.example"}, 421),
        ({"host": "evil.example:8000"}, 421),
        ({"host": "127.0.0.1.evil.example"}, 421),
        ({"origin": "http://evil.example"}, 403),
        ({"origin": "http://127.0.0.1.evil.example:80"}, 403),
    ],
)
def test_dns_rebinding_is_refused(http_server: Any, headers: dict[str, str], status: int) -> None:
    with httpx.Client(timeout=30, follow_redirects=True) as client:
        response = client.post(http_server.url + "/", json=INIT, headers={**ACCEPT, **headers})
    assert response.status_code == status, response.text
    assert "mcp-session-id" not in response.headers


def test_loopback_names_and_local_origins_are_served(http_server: Any) -> None:
    port = http_server.base.rsplit(":", 1)[1]
    with httpx.Client(timeout=30, follow_redirects=True) as client:
        for headers in ({"host": f"localhost:{port}"}, {"host": f"127.0.0.1:{port}", "origin": f"http://localhost:{port}"}):
            response = client.post(http_server.url + "/", json=INIT, headers={**ACCEPT, **headers})
            assert response.status_code == 200, (headers, response.text)


async def test_missing_token_is_refused(sdk: Any, start_http_server: Any) -> None:
    token = "a-test-token-that-is-long-enough-0123456789"
    server = start_http_server("--token", token)
    with httpx.Client(timeout=30, follow_redirects=True) as client:
        missing = client.post(server.url + "/", json=INIT, headers=ACCEPT)
        wrong = client.post(server.url + "/", json=INIT, headers={**ACCEPT, "authorization": "Bearer nope"})
    assert missing.status_code == 401 and wrong.status_code == 401
    async with sdk.http(server.url, headers={"Authorization": f"Bearer {token}"}) as session:
        result = await session.call_tool("ask", {"message": "with a token"})
    assert sdk.text(result).startswith("You said: with a token")


def test_allowed_hosts_option(start_http_server: Any) -> None:
    server = start_http_server("-o", "mcp.allowed_hosts=agent.internal:*,other.internal")
    with httpx.Client(timeout=30, follow_redirects=True) as client:
        ok = client.post(server.url + "/", json=INIT, headers={**ACCEPT, "host": "agent.internal:443"})
        ok2 = client.post(server.url + "/", json=INIT, headers={**ACCEPT, "host": "other.internal"})
        refused = client.post(server.url + "/", json=INIT, headers={**ACCEPT, "host": "third.internal"})
    assert ok.status_code == 200 and ok2.status_code == 200
    assert refused.status_code == 421


def test_a_body_over_the_doors_own_cap_is_413_and_the_session_serves_on(start_http_server: Any) -> None:
    """``mcp.max_body_bytes`` below the transport's: the door answers 413 itself, on SDK
    1.x too (on 2.x it hands the guard's body on without the SDK's buffering middleware,
    which had the cap), and the same session goes on."""
    server = start_http_server("-o", "mcp.max_body_bytes=20000")
    with httpx.Client(timeout=30, follow_redirects=True) as client:
        session = _initialize(client, server.url)
        headers = {**ACCEPT, "mcp-session-id": session}

        def call(message: str, id_: int) -> httpx.Response:
            body = {"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                    "params": {"name": "ask", "arguments": {"message": message}}}
            return client.post(server.url, json=body, headers=headers)

        over = call("x" * 25_000, 1)
        assert over.status_code == 413, over.text
        fine = call("under the cap", 2)
        assert fine.status_code == 200, fine.text
        (answer,) = [m for m in sse_messages(fine.text) if m.get("id") == 2]
        assert answer["result"]["content"][0]["text"].startswith("You said: under the cap")


# -- the door's app alone, on uvicorn in this process -----------------------------------------


@pytest.fixture
def standalone(sdk: Any) -> Any:
    import uvicorn
    from onedoor.composition import ServeContext
    from onedoor.testing import scripted_kernel
    from onedoor_door_mcp.asgi import make_app

    kernel = scripted_kernel()
    app = make_app(ServeContext(kernel=kernel))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/", kernel
    server.should_exit = True
    thread.join(20)


async def test_the_app_alone_serves_and_runs_its_own_lifespan(sdk: Any, standalone: Any) -> None:
    url, kernel = standalone
    async with sdk.http(url) as session:
        result = await session.call_tool("ask", {"message": "standalone"})
    assert sdk.text(result).startswith("You said: standalone")
    assert kernel.active_runs == 0


async def test_stateless_mode_still_streams_progress(sdk: Any, start_http_server: Any) -> None:
    """SDK 1.x loses progress in stateless mode unless it is tied to the request."""
    server = start_http_server("-o", "mcp.stateless=true")
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with sdk.http(server.url) as session:
        result = await session.call_tool("ask", {"message": "stateless stream"}, progress_callback=on_progress)
    texts = [m for m in seen if not m.startswith("[tool ")]
    assert "".join(texts) == sdk.text(result) == "You said: stateless stream (2 words, turn 1)"


def test_ending_the_session_cancels_its_runs(http_server: Any, outcomes: Any) -> None:
    with httpx.Client(timeout=30, follow_redirects=True) as client:
        session = _initialize(client, http_server.url)
        headers = {**ACCEPT, "mcp-session-id": session}
        call = {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                "params": {"name": "ask", "arguments": {"message": "/slow /long 400 end the session"}, "_meta": {"progressToken": 6}}}
        with client.stream("POST", http_server.url, json=call, headers=headers) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    break  # the run is streaming
            assert client.delete(http_server.url, headers=headers).status_code == 200
    record = outcomes.wait_for(lambda r: r["message"].startswith("/slow /long 400 end"))
    assert record["stop_reason"] == "cancelled" and record["workers_alive"] == 0
