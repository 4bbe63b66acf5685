"""Run the shared hostile corpus (onedoor.testing.hostile) against a JSON-RPC door over any
channel, and judge each exchange.

The oracle is the shared JSON-RPC layer itself (:func:`onedoor.wire.jsonrpc.parse_message`
with the door's rules): what it refuses must come back as exactly that error (-32700 or
-32600, same id); a malformed notification, a valid notification and a valid response
get no reply (a door may answer a response its SDK cannot read with -32600); a valid
request gets exactly one reply with its id. After each case a normal request must still
be answered. Every message the door sends must itself be one well-formed JSON-RPC
message.

A driver is anything with ``send_bytes(payload)`` and ``recv(timeout) -> dict``: an
in-memory channel, a stdio subprocess, a SLIM session (see the test folders).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

from onedoor.testing.hostile import Case
from onedoor.wire import jsonrpc

ERROR_CODES = {jsonrpc.PARSE_ERROR, jsonrpc.INVALID_REQUEST, jsonrpc.METHOD_NOT_FOUND, jsonrpc.INVALID_PARAMS,
               jsonrpc.INTERNAL_ERROR, -32002}


class Driver(Protocol):
    async def send_bytes(self, payload: bytes) -> None: ...

    async def recv(self, timeout: float) -> dict[str, Any]: ...


@dataclass
class Rules:
    """A door's JSON-RPC flavour and the normal request that proves it still serves."""

    check: Callable[[str], dict[str, Any]]  # id -> a request every healthy session answers
    null_id: bool = False
    array_params: bool = False
    line_framed: bool = False  # stdio: blank lines are not messages


@dataclass
class Tally:
    """What a run of cases found."""

    cases: int = 0
    internal_errors: list[str] = field(default_factory=list)  # -32603 replies: answered, but worth a look
    problems: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.cases} cases, {len(self.problems)} problems, {len(self.internal_errors)} internal errors"

    def assert_clean(self, cases: int) -> None:
        """Every one of ``cases`` cases ran, with no problem and no internal error."""
        assert self.problems == [], "\n".join(self.problems[:20])
        assert self.internal_errors == [], "\n".join(self.internal_errors[:20])
        assert self.cases == cases


_check_ids = itertools.count(1)


def _expectation(case: Case, rules: Rules) -> tuple[str, Any]:
    """("error", reply) | ("silence", None) | ("answer", id) | ("silence-or-error", id)."""
    if rules.line_framed and not case.payload.strip():
        return "silence", None  # not a line of NDJSON at all
    incoming = jsonrpc.parse_message(case.payload, null_id=rules.null_id, array_params=rules.array_params)
    if incoming.reply is not None:
        return "error", incoming.reply
    message = incoming.message
    if message is None or "id" not in message:
        return "silence", None  # a (malformed) notification
    if "method" in message:
        return "answer", message["id"]
    return "silence-or-error", message["id"]  # a response: never answered, unless unreadable


def _shape(message: Any, rules: Rules) -> str | None:
    if not isinstance(message, dict):
        return f"the door sent {type(message).__name__}, not a JSON-RPC object"
    problem = jsonrpc.shape_problem(message, null_id=True, array_params=rules.array_params)
    if problem is None and "error" in message:
        error = message["error"]
        well_formed = isinstance(error, dict) and isinstance(error.get("code"), int) and isinstance(error.get("message"), str)
        if not well_formed:
            problem = f"malformed error object {error!r}"
    return problem


async def run_case(driver: Driver, case: Case, rules: Rules, tally: Tally, timeout: float = 30.0) -> None:
    """Send one case and a check request; record what was wrong (nothing, if all went well)."""
    tally.cases += 1
    kind, expected = _expectation(case, rules)
    check_id = f"check-{next(_check_ids)}"
    await driver.send_bytes(case.payload)
    await driver.send_bytes(jsonrpc.dumps(rules.check(check_id)).encode())
    before: list[dict[str, Any]] = []
    checked = False
    while not checked or (kind == "answer" and not any(m.get("id") == expected and "method" not in m for m in before)):
        message = await driver.recv(timeout)  # a request's reply may come after the check's: wait for both
        problem = _shape(message, rules)
        if problem:
            tally.problems.append(f"{case}: {problem}")
            return
        if message.get("id") == check_id and "method" not in message:
            if "error" in message:
                tally.problems.append(f"{case}: the check request after it failed: {message['error']}")
            checked = True
            continue
        before.append(message)
    replies = [m for m in before if "method" not in m]
    for reply in replies:
        error = reply.get("error")
        if error is not None and error.get("code") == jsonrpc.INTERNAL_ERROR:
            tally.internal_errors.append(f"{case}: {error.get('message')}")
        if error is not None and error.get("code") not in ERROR_CODES:
            tally.problems.append(f"{case}: unexpected error code {error.get('code')}")
    if kind == "error":
        got = [(r.get("id"), r.get("error", {}).get("code")) for r in replies]
        want = [(expected["id"], expected["error"]["code"])]
        if got != want:
            tally.problems.append(f"{case}: expected the error {want}, got {got}")
    elif kind == "silence":
        if replies:
            tally.problems.append(f"{case}: expected no reply, got {replies}")
    elif kind == "answer":
        mine = [r for r in replies if r.get("id") == expected]
        if len(mine) != 1 or len(replies) != 1:
            tally.problems.append(f"{case}: expected one reply with id {expected!r}, got {replies}")
    else:  # a response
        if any(r.get("id") != expected or r.get("error", {}).get("code") != jsonrpc.INVALID_REQUEST for r in replies):
            tally.problems.append(f"{case}: a response got {replies}")


async def run_cases(
    driver: Driver, cases: list[Case], rules: Rules, *, timeout: float = 30.0,
    on_case: Callable[[Case], Awaitable[None]] | None = None,
) -> Tally:
    """Every case over one session (the slow transports cannot afford one each)."""
    tally = Tally()
    for case in cases:
        if on_case is not None:
            await on_case(case)
        await run_case(driver, case, rules, tally, timeout)
    return tally


def mcp_rules(*, line_framed: bool = False) -> Rules:
    return Rules(check=lambda rid: {"jsonrpc": "2.0", "id": rid, "method": "ping"}, line_framed=line_framed)


def acp_rules(*, line_framed: bool = False) -> Rules:
    return Rules(
        check=lambda rid: {"jsonrpc": "2.0", "id": rid, "method": "session/list", "params": {}},
        null_id=True, array_params=True, line_framed=line_framed,
    )


MCP_INIT = {
    "jsonrpc": "2.0", "id": "init", "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}},
}
MCP_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
MCP_TOOL_CALL = {
    "jsonrpc": "2.0", "id": 1, "method": "tools/call",
    "params": {"name": "ask", "arguments": {"message": "hello"}, "_meta": {"progressToken": "p1"}},
}
ACP_INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": 1}}


def acp_prompt(session_id: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0", "id": 1, "method": "session/prompt",
        "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "hello"}]},
    }


async def request(driver: Driver, message: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
    """Send one request and return its reply (notifications before it are skipped)."""
    await driver.send_bytes(jsonrpc.dumps(message).encode())
    while True:
        reply = await driver.recv(timeout)
        if reply.get("id") == message["id"] and "method" not in reply:
            return reply


async def mcp_handshake(driver: Driver) -> None:
    reply = await request(driver, MCP_INIT)
    assert "result" in reply, reply
    await driver.send_bytes(jsonrpc.dumps(MCP_INITIALIZED).encode())


async def acp_open_session(driver: Driver, cwd: str = "/tmp") -> str:
    reply = await request(driver, ACP_INIT)
    assert reply["result"]["protocolVersion"] == 1, reply
    new = await request(driver, {"jsonrpc": "2.0", "id": "new", "method": "session/new",
                                 "params": {"cwd": cwd, "mcpServers": []}})
    return new["result"]["sessionId"]


class ChannelDriver:
    """A driver over a client-side channel that can send raw bytes: the in-memory pair's
    client end (onedoor.testing) or a SLIM client channel."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel

    async def send_bytes(self, payload: bytes) -> None:
        await self.channel.send_bytes(payload)

    async def recv(self, timeout: float) -> dict[str, Any]:
        import asyncio
        import json

        try:
            text = await asyncio.wait_for(self.channel.recv(), timeout)
        except TimeoutError:
            raise AssertionError(f"no message from the door within {timeout:g} s") from None
        assert text is not None, f"the door ended the session ({getattr(self.channel, 'error', None) or 'closed'})"
        return json.loads(text)


def fuzz_door(
    door: Any, ctx: Any, rules: Rules, *, start: Callable[[Driver], Awaitable[Any]], methods: list[str],
    params: Callable[[Any, Any], Any] | None = None, max_examples: int = 300,
) -> None:
    """Property-based fuzzing of a door's JSON-RPC layer over one in-memory session.

    Payloads are any bytes, any JSON value, or JSON-RPC-shaped objects with ``methods`` (and
    ``params(values, started)`` if given, ``started`` being what ``start`` returned, e.g. a
    session id); each must get a correct answer, or none, and the session must go on.
    """
    import asyncio
    import json

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from onedoor.testing import channel_pair

    loop = asyncio.new_event_loop()
    door_end, client = channel_pair()
    driver = ChannelDriver(client)
    task = loop.create_task(door.serve_channel(door_end, ctx))
    try:
        started = loop.run_until_complete(start(driver))
        scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
        def containers(inner: Any) -> Any:
            return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)

        values = st.recursive(scalars, containers, max_leaves=10)
        ids = st.integers(-(2**63), 2**63) | st.text(max_size=5) | st.none() | st.floats(allow_nan=False)
        shaped = st.fixed_dictionaries(
            {
                "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"]),
                "method": st.sampled_from(methods) | st.text(max_size=10),
                "params": params(values, started) if params is not None else values,
            },
            optional={"id": ids},
        )
        payloads = st.binary(max_size=200) | (values | shaped).map(lambda value: json.dumps(value).encode())

        @settings(max_examples=max_examples, deadline=None, suppress_health_check=list(HealthCheck))
        @given(payload=payloads)
        def check(payload: bytes) -> None:
            tally = Tally()
            loop.run_until_complete(run_case(driver, Case("fuzz", payload), rules, tally, timeout=15))
            assert tally.problems == [], tally.problems

        check()
    finally:
        loop.run_until_complete(client.close())
        loop.run_until_complete(asyncio.wait_for(task, 15))
        loop.close()


class StdioDriver:
    """A JSON-RPC door in a real subprocess over stdio; every stdout line must be JSON-RPC.

    stderr goes to a file, read at :meth:`finish` (which closes stdin and waits for the
    exit): the test then checks it holds no traceback.
    """

    def __init__(self, proc: Any, stderr_path: Any) -> None:
        self.proc = proc
        self.stderr_path = stderr_path
        self.stdout_lines = 0

    @classmethod
    async def start(cls, argv: list[str], stderr_path: Any, env: dict[str, str] | None = None) -> "StdioDriver":
        import asyncio
        import os

        with open(stderr_path, "wb") as err:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=err,
                env={**os.environ, **(env or {})}, limit=64 * 1024 * 1024,
            )
        return cls(proc, stderr_path)

    async def send_bytes(self, payload: bytes) -> None:
        assert b"\n" not in payload, "a stdio case must be one line"
        self.proc.stdin.write(payload + b"\n")
        await self.proc.stdin.drain()

    async def recv(self, timeout: float) -> dict[str, Any]:
        import asyncio
        import json

        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        except TimeoutError:
            raise AssertionError(f"no line on stdout within {timeout:g} s") from None
        assert line, f"the server closed stdout (exit code {self.proc.returncode}); stderr:\n{self.stderr()[-3000:]}"
        self.stdout_lines += 1
        try:
            return json.loads(line)
        except ValueError:
            raise AssertionError(f"stdout carried a line that is not JSON: {line[:300]!r}") from None

    def stderr(self) -> str:
        from pathlib import Path

        return Path(self.stderr_path).read_text(errors="replace")

    def clean_stderr(self) -> str:
        """stderr, once checked to hold no traceback."""
        from onedoor.testing.hostile import traceback_in

        text = self.stderr()
        assert traceback_in(text) is None, text[-3000:]
        return text

    async def finish(self, timeout: float = 30.0) -> int:
        """Close stdin (the stdio shutdown), read what is left, wait for the exit code."""
        import asyncio
        import json

        self.proc.stdin.close()
        rest = await asyncio.wait_for(self.proc.stdout.read(), timeout)
        for line in rest.splitlines():
            json.loads(line)  # stdout carries only protocol bytes, to the end
            self.stdout_lines += 1
        return await asyncio.wait_for(self.proc.wait(), timeout)

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
