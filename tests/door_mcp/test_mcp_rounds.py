"""The agent's questions on MCP 2026-07-28: multi-round-trip requests (``input_required``).

The SDK 2.x ``Client`` negotiates 2026-07-28 and answers ``inputRequests`` through its
``elicitation_callback``, retrying the call itself; ``client.session.call_tool(...,
allow_input_required=True)`` returns the ``InputRequiredResult`` so a test can retry by
hand (decline, cancel, a tampered state, another principal, wrong arguments...). Real
``onedoor serve --door mcp`` processes over stdio and streamable HTTP; one test runs the
door in memory with an agent that asks twice.

Several servers (as behind a round-robin balancer): the first round on one, the retry on
another. The retry's ``requestState`` is sealed by the first server; another opens it
only with the same key (the same ``mcp.request_state_keys``, or keys derived from the
same token), else it answers -32602 ``invalid_request_state``. The servers share one
SQLite file (``sqlite.shared_journal``): the retry's server carries the answers to the
server holding the run and reads the run's journal.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.timeout(240), pytest.mark.skipif(
    int(__import__("importlib.metadata").metadata.version("mcp").split(".")[0]) < 2,
    reason="the 2026-07-28 revision (multi-round-trip requests) needs the MCP SDK 2.x")]

CHOICES = ["allow_once", "allow_always", "reject_once", "reject_always"]
COPIES = {"type": "object", "properties": {"copies": {"type": "integer", "minimum": 1, "maximum": 9}},
          "required": ["copies"]}
ASK_COPIES = "/question " + json.dumps({"prompt": "How many copies?", "schema": COPIES})


class Person:
    """An elicitation callback answering from a script, noting each request's params as JSON."""

    def __init__(self, *replies: tuple[str, Any]) -> None:
        self.replies = list(replies)
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        import mcp.types as types

        self.asked.append(params.model_dump(by_alias=True, mode="json", exclude_none=True))
        assert self.replies, f"asked more often than scripted: {self.asked[-1]}"
        action, content = self.replies.pop(0)
        return types.ElicitResult(action=action, content=content)


def texts(result: Any) -> list[str]:
    return [str(getattr(block, "text", "")) for block in result.content]


def answers_of(result: Any) -> list[dict[str, Any]]:
    """``structuredContent["answers"]`` without the (random) question ids."""
    records = (result.structured_content or {}).get("answers", [])
    assert all(record.pop("question_id").startswith("q-") for record in records), records
    return records


def elicit(action: str, content: Any = None) -> Any:
    import mcp.types as types

    return types.ElicitResult(action=action, content=content)


async def refused(call: Any) -> dict[str, Any]:
    """The JSON-RPC error a call is answered with: ``{"code", "message", "data"}``."""
    from mcp.shared.exceptions import MCPError

    with pytest.raises(MCPError) as caught:
        await call
    return caught.value.error.model_dump(mode="json")


def client_for(url: str, token: str = "", **options: Any) -> Any:
    """A 2.x ``Client`` over streamable HTTP (with a bearer token)."""
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    if not token:
        return Client(url, **options)
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    return Client(streamable_http_client(url, http_client=http), **options)


async def first_round(client: Any, message: str) -> Any:
    result = await client.session.call_tool("ask", {"message": message}, allow_input_required=True)
    assert type(result).__name__ == "InputRequiredResult", result
    return result


async def retry(client: Any, message: str, asking: Any, responses: dict[str, Any], state: str | None = None) -> Any:
    return await client.session.call_tool("ask", {"message": message}, input_responses=responses,
                                          request_state=state if state is not None else asking.request_state,
                                          allow_input_required=True)


# -- the SDK's client answers through its callback -------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_2x_client_answers_through_its_callback(sdk: Any, start_http_server: Any, transport: str) -> None:
    """An approval and a question reach the person as elicitation forms (the same as on
    2025-11-25); the replies show the answers, the result lists them, and the reply's
    progress (after the answer) still streams."""
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    if transport == "http":
        target: Any = start_http_server("-o", "scripted.delay=0").url
    else:
        argv = sdk.command("-o", "scripted.delay=0")
        target = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    person = Person(("accept", {"decision": "allow_once"}), ("accept", {"copies": 3}), ("decline", None))
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with Client(target, elicitation_callback=person) as client:
        assert client.session.protocol_version == "2026-07-28"
        await client.list_tools()  # the client checks structuredContent against the outputSchema listed
        approved = await client.call_tool("ask", {"message": '/ask rm {"path": "/tmp/x"}'}, progress_callback=on_progress)
        copies = await client.call_tool("ask", {"message": ASK_COPIES})
        declined = await client.call_tool("ask", {"message": "/ask rm {}"})
        plain = await client.call_tool("ask", {"message": "hello"})
    assert texts(approved) == ["Approved (allow_once): ran rm"] and not approved.is_error
    assert texts(copies) == ['You answered {"copies": 3}']
    assert texts(declined) == ["Not approved (reject_once): did not run rm"]
    assert texts(plain) == ["You said: hello (1 word, turn 1)"] and person.replies == []
    [record] = answers_of(approved)
    assert record.pop("by")  # the principal the answer came from
    assert record == {"kind": "approval", "prompt": "Allow the agent to run rm?", "tool": "rm", "outcome": "allow_once",
                      "how": "person"}
    assert [r["value"] for r in answers_of(copies)] == [{"copies": 3}]
    assert [(r["outcome"], r["how"]) for r in answers_of(declined)] == [("reject_once", "person")]
    request = person.asked[0]
    assert request["mode"] == "form" and '"path": "/tmp/x"' in request["message"]
    decision = request["requestedSchema"]["properties"]["decision"]
    assert request["requestedSchema"]["required"] == ["decision"] and decision["enum"] == CHOICES
    assert person.asked[1]["message"] == "How many copies?" and person.asked[1]["requestedSchema"] == COPIES
    # The tool's start went out in the first round, the rest of the run in the retry's.
    assert progress[0].startswith("[tool rm {") and [p for p in progress if p.startswith("[tool rm -> ")]
    assert "".join(p for p in progress if not p.startswith("[tool")) == "Approved (allow_once): ran rm"
    assert len([p for p in progress if p.startswith("[tool rm {")]) == 1  # not sent again in the retry


async def test_a_client_without_elicitation_gets_the_policy(start_http_server: Any) -> None:
    """No elicitation capability on 2026-07-28: the ask_fallback policy answers, and says so."""
    server = start_http_server("-o", "scripted.delay=0", "-o", "mcp.ask_fallback=allow")
    async with client_for(server.url) as client:
        result = await client.call_tool("ask", {"message": "/ask rm {}"})
    assert texts(result) == [
        "Approved (allow_once): ran rm",
        "The agent asked to run rm; no one could be asked here (the client did not declare the elicitation "
        "capability), so the server's ask_fallback policy (allow) answered allow_once.",
    ]


# -- rounds by hand: what a retry may get wrong ----------------------------------------------------------


async def test_rounds_by_hand(start_http_server: Any) -> None:
    """Decline and cancel are answers; a state that is tampered with, for other arguments,
    already used, or answers that are missing, unknown or do not fit are -32602 errors with a
    reason, nothing is answered, and the run still waits for a good retry."""
    server = start_http_server("-o", "scripted.delay=0")
    ask_rm = "/ask rm {}"
    async with client_for(server.url, elicitation_callback=Person()) as client:
        asking = await first_round(client, ask_rm)
        [key] = asking.input_requests
        request = asking.input_requests[key]
        assert request.method == "elicitation/create" and key.startswith("q-")
        assert request.params.requested_schema["properties"]["decision"]["enum"] == CHOICES

        tampered = asking.request_state[:-4] + ("AAAA" if not asking.request_state.endswith("AAAA") else "BBBB")
        for state in (tampered, "v1.nonsense", "plain"):
            error = await refused(retry(client, ask_rm, asking, {key: elicit("accept", {"decision": "allow_once"})},
                                        state))
            assert error["code"] == -32602 and error["data"] == {"reason": "invalid_request_state"}, error
        other = client.session.call_tool("ask", {"message": "/ask other {}"}, request_state=asking.request_state,
                                         input_responses={key: elicit("accept", {"decision": "allow_once"})},
                                         allow_input_required=True)
        error = await refused(other)  # the state is bound to the call's arguments
        assert error["code"] == -32602 and error["data"] == {"reason": "invalid_request_state"}, error

        cases = [
            ({}, "missing_input_response"),
            ({key: elicit("accept", {"decision": "allow_once"}), "q-other": elicit("decline")}, "unknown_input_response"),
            ({key: elicit("accept", {"decision": "maybe"})}, "invalid_answer"),
            ({key: elicit("accept", {})}, "invalid_answer"),
            ({key: elicit("accept", None)}, "invalid_answer"),
        ]
        for responses, reason in cases:
            error = await refused(retry(client, ask_rm, asking, responses))
            assert error["code"] == -32602 and error["data"] == {"reason": reason}, (responses, error)
            assert error["message"]

        declined = await retry(client, ask_rm, asking, {key: elicit("decline")})  # the run still waited
        assert texts(declined) == ["Not approved (reject_once): did not run rm"]
        assert [(r["outcome"], r["how"]) for r in answers_of(declined)] == [("reject_once", "person")]
        again = await refused(retry(client, ask_rm, asking, {key: elicit("accept", {"decision": "allow_once"})}))
        assert again["code"] == -32602 and again["data"] == {"reason": "answered_question"}, again

        question = await first_round(client, "/question Colour?")
        [qkey] = question.input_requests
        cancelled = await retry(client, "/question Colour?", question, {qkey: elicit("cancel")})
        assert texts(cancelled) == ["No answer (cancel)"]
        copies = await first_round(client, ASK_COPIES)
        [ckey] = copies.input_requests
        outside = await refused(retry(client, ASK_COPIES, copies, {ckey: elicit("accept", {"copies": 0})}))
        assert outside["data"] == {"reason": "invalid_answer"}, outside  # the kernel checks it against the form
        fitted = await retry(client, ASK_COPIES, copies, {ckey: elicit("accept", {"copies": 2})})
        assert texts(fitted) == ['You answered {"copies": 2}']

        plain = await client.call_tool("ask", {"message": "still there?"})  # the server keeps serving
        assert texts(plain)[0].startswith("You said: still there?")
    assert "Traceback" not in server.log.read_text()


async def test_a_run_that_ended_and_an_expired_state(start_http_server: Any, outcomes: Any) -> None:
    """A question whose time ran out ends its run (cancelled); its state has expired with it:
    the retry is refused -32602, and the server goes on serving."""
    server = start_http_server("-o", "scripted.delay=0", "-o", "limits.question_ttl=1")
    async with client_for(server.url, elicitation_callback=Person()) as client:
        asking = await first_round(client, "/ask late {}")
        [key] = asking.input_requests
        outcomes.wait_for(lambda r: r["message"] == "/ask late {}" and r["stop_reason"] == "cancelled")
        error = await refused(retry(client, "/ask late {}", asking, {key: elicit("accept", {"decision": "allow_once"})}))
        assert error["code"] == -32602 and error["data"]["reason"] in ("invalid_request_state", "expired_question"), error
        after = await client.call_tool("ask", {"message": "after"})
    assert texts(after)[0].startswith("You said: after")


async def test_another_principals_retry_is_refused(start_http_server: Any, tmp_path: Path) -> None:
    """The state is bound to the caller's principal: another principal's retry is refused
    (and answers nothing: the run's own principal answers it afterwards)."""
    tokens = tmp_path / "tokens"
    alice, bob = "alice-token-0123456789abcdef", "bob-token-0123456789abcdefgh"
    tokens.write_text(f"alice {alice}\nbob {bob}\n")
    server = start_http_server("-o", "scripted.delay=0", "-o", f"http.tokens_file={tokens}")
    async with client_for(server.url, alice, elicitation_callback=Person()) as as_alice:
        asking = await first_round(as_alice, "/ask rm {}")
        [key] = asking.input_requests
        async with client_for(server.url, bob, elicitation_callback=Person()) as as_bob:
            error = await refused(retry(as_bob, "/ask rm {}", asking, {key: elicit("accept", {"decision": "allow_once"})}))
        assert error["code"] == -32602 and error["data"] == {"reason": "invalid_request_state"}, error
        result = await retry(as_alice, "/ask rm {}", asking, {key: elicit("accept", {"decision": "allow_once"})})
    assert texts(result) == ["Approved (allow_once): ran rm"]


# -- in memory: an agent that asks twice ------------------------------------------------------------


class AsksTwice:
    """An async agent that asks for an approval, then a question, then replies with both."""

    async def run(self, message: str, *, history: Any = None, context: Any = None) -> Any:
        from onedoor import Question, RunFinished, RunStarted, TextDelta, ToolFinished, ToolStarted

        yield RunStarted(context.run_id)
        yield TextDelta("Checking. ")
        yield ToolStarted("call-1", "deploy", {"to": "prod"})
        approval = await context.ask(Question.approval("call-1", "deploy", {"to": "prod"}))
        yield ToolFinished("call-1", "deploy", {"ran": approval.allowed}, is_error=not approval.allowed)
        answer = await context.ask(Question.input("Release name?"))
        text = f"deploy {approval.outcome}, name {answer.value}"
        yield TextDelta(text)
        yield RunFinished(context.run_id, "Checking. " + text)


async def test_a_run_that_asks_again_gets_another_round() -> None:
    """Each question is its own round; the final result lists both answers and the whole
    reply; a retry's progress carries only what is new."""
    from mcp import ClientSession
    from onedoor.composition import ServeContext
    from onedoor.testing import channel_pair, kernel_for_agent
    from onedoor_door_mcp import McpOptions, door
    from onedoor_door_mcp.client import mcp_streams

    kernel = kernel_for_agent(AsksTwice)
    door_end, client_end = channel_pair()
    ctx = ServeContext(kernel=kernel, options={"mcp": McpOptions()}, door_names=["mcp"])
    serving = asyncio.ensure_future(door().serve_channel(door_end, ctx))
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with mcp_streams(client_end) as (read, write):
        async with ClientSession(read, write, elicitation_callback=Person()) as session:
            await session.discover()
            args = {"message": "go"}
            first = await session.call_tool("ask", args, allow_input_required=True, progress_callback=on_progress)
            [approval] = first.input_requests
            assert "deploy" in first.input_requests[approval].params.message
            seen = list(progress)
            second = await session.call_tool("ask", args, input_responses={approval: elicit("accept", {"decision": "allow_once"})},
                                              request_state=first.request_state, allow_input_required=True,
                                              progress_callback=on_progress)
            assert type(second).__name__ == "InputRequiredResult" and second.request_state != first.request_state
            [question] = second.input_requests
            assert second.input_requests[question].params.message == "Release name?"
            again = await refused(session.call_tool("ask", args, input_responses={approval: elicit("decline")},
                                                    request_state=first.request_state, allow_input_required=True))
            assert again["data"] == {"reason": "answered_question"}, again
            final = await session.call_tool("ask", args, input_responses={question: elicit("accept", {"answer": "r1"})},
                                            request_state=second.request_state, allow_input_required=True,
                                            progress_callback=on_progress)
    await client_end.close()
    await asyncio.wait_for(serving, 30)
    assert texts(final) == ["Checking. deploy allow_once, name {'answer': 'r1'}"]
    assert [(r["kind"], r["outcome"]) for r in answers_of(final)] == [("approval", "allow_once"), ("input", "accept")]
    assert seen == ["Checking. ", "[tool deploy {\"to\": \"prod\"}]\n"]
    assert progress.count("Checking. ") == 1 and progress[-1] == "deploy allow_once, name {'answer': 'r1'}"
    assert kernel.active_runs == 0 and kernel.parked_runs == 0


# -- several servers ----------------------------------------------------------------------------------


TOKEN = "shared-token-0123456789abcdef"
KEYS = "k" * 40 + ",old-key-0123456789abcdef0123456789abcdef"
ALLOW = {"decision": "allow_once"}


def servers(start: Any, db: Path, *extra: str, count: int = 2) -> list[Any]:
    return [start("-o", "scripted.delay=0", "-o", f"sqlite.path={db}", "-o", "sqlite.shared_journal=true", *extra)
            for _ in range(count)]


async def test_a_shared_key_opens_the_state_on_another_server(start_http_server: Any, tmp_path: Path) -> None:
    """Servers with the same token (or the same request_state_keys) open each other's states
    and answer the run another server holds; a server with a key of its own refuses them
    -32602 (and answers nothing: the run still waits for the good retry)."""
    db = tmp_path / "shared.sqlite3"
    a, b = servers(start_http_server, db, "--token", TOKEN)
    c, d = servers(start_http_server, db, "--token", TOKEN, "-o", f"mcp.request_state_keys={KEYS}")
    [alone] = servers(start_http_server, tmp_path / "alone.sqlite3", count=1)  # no token, no keys: its own key
    message = "/ask rm {}"
    for first, same, others in ((a, b, (c, alone)), (c, d, (a, alone))):
        async with client_for(first.url, TOKEN, elicitation_callback=Person()) as on_first:
            asking = await first_round(on_first, message)
        [key] = asking.input_requests
        for other in others:
            async with client_for(other.url, TOKEN, elicitation_callback=Person()) as there:
                error = await refused(retry(there, message, asking, {key: elicit("accept", ALLOW)}))
            assert error["code"] == -32602 and error["data"] == {"reason": "invalid_request_state"}, error
        async with client_for(same.url, TOKEN, elicitation_callback=Person()) as on_same:
            result = await retry(on_same, message, asking, {key: elicit("accept", ALLOW)})
        assert texts(result) == ["Approved (allow_once): ran rm"]
    for server in (a, b, c, d, alone):
        assert "Traceback" not in server.log.read_text()


async def test_the_retry_is_answered_on_another_server(start_http_server: Any, tmp_path: Path) -> None:
    """The first round on server A, the retry on server B: B carries the answer to the run A
    holds and reads it on, through the shared journal, to its end (its progress after the
    answer, the answers listed); the same retry again, on A, is refused as answered."""
    a, b = servers(start_http_server, tmp_path / "shared.sqlite3", "--token", TOKEN)
    message = '/ask rm {"path": "/tmp/x"}'
    async with client_for(a.url, TOKEN, elicitation_callback=Person()) as on_a:
        asking = await first_round(on_a, message)
        [key] = asking.input_requests
        progress: list[str] = []

        async def on_progress(value: float, total: float | None, text: str | None) -> None:
            progress.append(text or "")

        async with client_for(b.url, TOKEN, elicitation_callback=Person()) as on_b:
            result = await on_b.session.call_tool(
                "ask", {"message": message}, input_responses={key: elicit("accept", ALLOW)},
                request_state=asking.request_state, allow_input_required=True, progress_callback=on_progress)
        assert texts(result) == ["Approved (allow_once): ran rm"] and not result.is_error
        [record] = answers_of(result)
        assert (record["kind"], record["outcome"], record["how"]) == ("approval", "allow_once", "person")
        assert [p for p in progress if p.startswith("[tool rm -> ")] and not [p for p in progress if p.startswith("[tool rm {")]
        again = await refused(retry(on_a, message, asking, {key: elicit("decline")}))
    assert again["code"] == -32602 and again["data"] == {"reason": "answered_question"}, again
