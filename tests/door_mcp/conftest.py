"""Fixtures for the MCP door tests: real server processes and SDK clients (1.x or 2.x)."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import pytest
from onedoor_test_support import wait_for

HERE = Path(__file__).parent
LAUNCHER = HERE / "onedoor_test_launcher.py"
JS = HERE / "js"
_servers = itertools.count(1)
MCP_MAJOR = int(__import__("importlib.metadata").metadata.version("mcp").split(".")[0])


def stdio_command(*extra: str, backend: str = "scripted") -> list[str]:
    """argv of an MCP stdio server run through the test launcher."""
    return [sys.executable, str(LAUNCHER), "serve", "--door", "mcp", "--transport", "stdio", "-b", backend, *extra]


class Outcomes:
    """Run outcomes (and the requests the door served) written by the launcher's observer hooks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.requests_path = path.with_name("requests.jsonl")

    @property
    def env(self) -> dict[str, str]:
        return {"ONEDOOR_TEST_OUTCOMES": str(self.path), "ONEDOOR_TEST_REQUESTS": str(self.requests_path)}

    @staticmethod
    def _lines(path: Path) -> list[dict[str, Any]]:
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def read(self) -> list[dict[str, Any]]:
        return self._lines(self.path)

    def requests(self) -> list[dict[str, Any]]:
        """``{"at": "started" | "finished", "method", "transport", "meta", "principal", "error"?}`` per request."""
        return self._lines(self.requests_path)

    def wait_for(self, predicate: Any, timeout: float = 20.0) -> dict[str, Any]:
        def match() -> dict[str, Any] | None:
            return next((record for record in self.read() if predicate(record)), None)

        try:
            return wait_for(match, f"a matching run outcome in {self.path}", timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; seen: {self.read()}") from None


@pytest.fixture
def outcomes(tmp_path: Path) -> Outcomes:
    return Outcomes(tmp_path / "outcomes.jsonl")


# -- the HTTP server: `onedoor serve --door mcp --transport http` -----------------------------


class HttpServer:
    def __init__(self, proc: subprocess.Popen, base: str, log: Path) -> None:
        self.proc = proc
        self.base = base
        self.url = base + "/mcp"
        self.log = log

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


_LISTENING = re.compile(r"listening on (http://\S+)")


def start_http(tmp_path: Path, *extra: str, env: dict[str, str] | None = None, backend: str = "scripted") -> HttpServer:
    """A real `onedoor serve --door mcp --transport http` on a loopback port the server
    picks itself (``--port 0``: no port chosen before it is bound)."""
    log = tmp_path / f"server-{next(_servers)}.log"
    cmd = [sys.executable, str(LAUNCHER), "serve", "--door", "mcp", "--transport", "http", "-b", backend,
           "--host", "127.0.0.1", "--port", "0", *extra]
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=full_env)

    def listening() -> str | None:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()}")
        match = _LISTENING.search(log.read_text())
        return match.group(1) if match else None

    try:
        base = wait_for(listening, f"the MCP HTTP server to print its address (log {log})", timeout=30)
    except AssertionError:
        proc.kill()
        proc.wait(5)
        raise AssertionError(f"server did not start: {log.read_text()}") from None
    return HttpServer(proc, base.rstrip("/"), log)


@pytest.fixture
def http_server(tmp_path: Path, outcomes: Outcomes) -> Any:
    server = start_http(tmp_path, "-o", "scripted.delay=0", env=outcomes.env)
    yield server
    server.stop()


@pytest.fixture
def start_http_server(tmp_path: Path, outcomes: Outcomes) -> Any:
    """Start servers with extra arguments; all are stopped at the end of the test."""
    started: list[HttpServer] = []

    def start(*extra: str) -> HttpServer:
        server = start_http(tmp_path, *extra, env=outcomes.env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


# -- the Python SDK client, 1.x or 2.x --------------------------------------------------------


@asynccontextmanager
async def stdio_session(argv: list[str], env: dict[str, str] | None = None, **options: Any) -> AsyncIterator[Any]:
    """A ClientSession over a server process's stdio; ``options`` go to ClientSession
    (e.g. ``elicitation_callback``)."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env={**os.environ, **(env or {})})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, **options) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(url: str, headers: dict[str, str] | None = None, **options: Any) -> AsyncIterator[Any]:
    """A ClientSession over streamable HTTP; ``options`` go to ClientSession."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1], **options) as session:
                await session.initialize()
                yield session


def result_text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def is_error(result: Any) -> bool:
    return bool(getattr(result, "isError", None) or getattr(result, "is_error", None))


def server_instructions(init: Any) -> str:
    return init.instructions or ""


@pytest.fixture
def sdk() -> Any:
    """The client helpers, as one object (conftest modules cannot be imported)."""

    class SDK:
        major = MCP_MAJOR
        stdio = staticmethod(stdio_session)
        http = staticmethod(http_session)
        text = staticmethod(result_text)
        error = staticmethod(is_error)
        command = staticmethod(stdio_command)

    return SDK


@pytest.fixture(params=["stdio", "http"])
def door_at(request: pytest.FixtureRequest, tmp_path: Path, outcomes: Outcomes) -> Any:
    """``door_at(*server_args)`` -> ``connect(**client_options)``, an async context manager
    giving an initialized ClientSession to a real door server over stdio (a process per
    session) or streamable HTTP (one server, stopped at the end of the test). The scripted
    backend runs with no delay; ``client_options`` go to ClientSession."""
    started: list[HttpServer] = []

    def at(*extra: str) -> Any:
        if request.param == "stdio":
            argv = stdio_command("-o", "scripted.delay=0", *extra)
            return lambda **options: stdio_session(argv, env=outcomes.env, **options)
        server = start_http(tmp_path, "-o", "scripted.delay=0", *extra, env=outcomes.env)
        started.append(server)
        return lambda **options: http_session(server.url, **options)

    at.transport = request.param  # type: ignore[attr-defined]
    yield at
    for server in started:
        server.stop()


# -- node ----------------------------------------------------------------------------------------


def node_ready() -> str | None:
    """Why the npm clients cannot run, or None."""
    if shutil.which("node") is None:
        return "node is not installed (the CI image needs Node 20+)"
    if not (JS / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        return "run `npm ci --prefix tests/door_mcp/js` first (nox does it for this combo)"
    return None
