"""The agent's questions over MCP elicitation: the Python SDK's ClientSession (1.x or 2.x)
with an ``elicitation_callback``, against real door servers over stdio and streamable HTTP.

The scripted backend asks: ``/ask NAME {json}`` (a tool approval: the reply says
"Approved (OUTCOME): ran NAME" or "Not approved (OUTCOME): did not run NAME") and
``/question TEXT`` or ``/question {"prompt", "schema"}`` (the reply repeats the answer,
or says "No answer (OUTCOME)").

The result's first text block is the agent's reply; an answer no person gave adds a text
block saying who answered (the ask_fallback policy, an unusable answer), and
``structuredContent["answers"]`` lists every answer.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(180)

CHOICES = ["allow_once", "allow_always", "reject_once", "reject_always"]
ASK_RM = '/ask rm {"path": "/tmp/x", "recursive": true}'
COPIES = {
    "type": "object",
    "properties": {
        "copies": {"type": "integer", "minimum": 1, "maximum": 9},
        "colour": {"type": "string", "enum": ["red", "blue"]},
    },
    "required": ["copies"],
}
ASK_COPIES = "/question " + json.dumps({"prompt": "How many copies?", "schema": COPIES})


class Person:
    """An elicitation callback that answers from a script, in order, and notes each request
    (as the JSON the server sent: ``message``, ``requestedSchema``, ``_meta``)."""

    def __init__(self, *replies: tuple[str, Any], timeline: list[Any] | None = None) -> None:
        self.replies = list(replies)
        self.asked: list[dict[str, Any]] = []
        self.timeline = timeline if timeline is not None else []

    async def __call__(self, context: Any, params: Any) -> Any:
        import mcp.types as types

        self.asked.append(params.model_dump(by_alias=True, mode="json", exclude_none=True))
        self.timeline.append("asked")
        assert self.replies, f"asked more often than scripted: {self.asked[-1]}"
        action, content = self.replies.pop(0)
        return types.ElicitResult(action=action, content=content)


class Hangs:
    """An elicitation callback that never answers; ``asked`` is set once it was asked."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def __call__(self, context: Any, params: Any) -> Any:
        self.asked.set()
        await asyncio.Event().wait()


async def ask(session: Any, sdk: Any, message: str, **options: Any) -> str:
    """The reply of one call (its first text block), which must not be an error result."""
    result = await session.call_tool("ask", {"message": message}, **options)
    assert not sdk.error(result), sdk.text(result)
    return blocks(result)[0]


def blocks(result: Any) -> list[str]:
    """The text blocks of a result."""
    return [str(getattr(block, "text", "")) for block in result.content]


def structured(result: Any) -> Any:
    """A result's structured content, under the SDK's spelling (1.x or 2.x)."""
    if hasattr(result, "structuredContent"):
        return result.structuredContent
    return result.structured_content


def answers_of(result: Any) -> list[dict[str, Any]]:
    """``structuredContent["answers"]`` without the (random) question ids."""
    records = (structured(result) or {}).get("answers", [])
    assert all(record.pop("question_id").startswith("q-") for record in records), records
    return records


# -- a client that declared elicitation ----------------------------------------------------------


async def test_approvals_are_asked_by_elicitation(door_at: Any, sdk: Any) -> None:
    connect = door_at()
    timeline: list[Any] = []
    person = Person(
        ("accept", {"decision": "allow_once"}),
        ("accept", {"decision": "allow_always"}),
        ("accept", {"decision": "reject_always"}),
        ("decline", None),
        ("cancel", None),
        ("accept", {"decision": "maybe"}),  # not a choice: the kernel answers no
        ("accept", {"decision": 7}),
        ("accept", {}),
        ("accept", None),
        timeline=timeline,
    )

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        timeline.append(message or "")

    async with connect(elicitation_callback=person) as session:
        first = await ask(session, sdk, ASK_RM, progress_callback=on_progress)
        replies = [await ask(session, sdk, f"/ask tool{i} {{}}") for i in range(2, 10)]
        after = await ask(session, sdk, "still there?")

    assert first == "Approved (allow_once): ran rm"
    assert replies == [
        "Approved (allow_always): ran tool2",
        "Not approved (reject_always): did not run tool3",
        "Not approved (reject_once): did not run tool4",
        "Not approved (reject_once): did not run tool5",
        "Not approved (reject_once): did not run tool6",
        "Not approved (reject_once): did not run tool7",
        "Not approved (reject_once): did not run tool8",
        "Not approved (reject_once): did not run tool9",
    ]
    assert after.startswith("You said: still there?")
    assert len(person.asked) == 9 and not person.replies
    request = person.asked[0]
    assert "rm" in request["message"] and '"path": "/tmp/x"' in request["message"]
    assert request.get("mode", "form") == "form"
    decision = request["requestedSchema"]["properties"]["decision"]
    assert request["requestedSchema"]["required"] == ["decision"]
    assert decision["type"] == "string" and decision["enum"] == CHOICES
    assert [option["const"] for option in decision["oneOf"]] == CHOICES
    about = request["_meta"]["onedoor/question"]
    assert about["kind"] == "approval" and about["id"].startswith("q-")
    assert about["tool"]["name"] == "rm" and about["tool"]["arguments"] == {"path": "/tmp/x", "recursive": True}
    # The tool call's start went out before the question, nothing while it was open, the rest after.
    asked = timeline.index("asked")
    before, after_answer = timeline[:asked], timeline[asked + 1 : timeline.index("asked", asked + 1)]
    assert [item for item in before if item.startswith("[tool rm {")], timeline
    assert [item for item in after_answer if item.startswith("[tool rm -> ")], timeline
    assert "".join(item for item in after_answer if not item.startswith("[tool")) == first


async def test_questions_are_asked_by_elicitation(door_at: Any, sdk: Any) -> None:
    connect = door_at()
    person = Person(
        ("accept", {"answer": "blue"}),
        ("accept", {"copies": 3, "colour": "red"}),
        ("decline", None),
        ("cancel", None),
        ("accept", {"answer": 5}),  # does not fit the schema: declined
        ("accept", {"copies": 0}),  # below the minimum
        ("accept", {"colour": "red"}),  # a required field missing
    )
    async with connect(elicitation_callback=person) as session:
        replies = [
            await ask(session, sdk, "/question What is your favourite colour?"),
            await ask(session, sdk, ASK_COPIES),
            await ask(session, sdk, "/question Shall I go on?"),
            await ask(session, sdk, "/question Shall I go on?"),
            await ask(session, sdk, "/question Colour?"),
            await ask(session, sdk, ASK_COPIES),
            await ask(session, sdk, ASK_COPIES),
        ]
    assert replies == [
        'You answered {"answer": "blue"}',
        'You answered {"colour": "red", "copies": 3}',
        "No answer (decline)",
        "No answer (cancel)",
        "No answer (decline)",
        "No answer (decline)",
        "No answer (decline)",
    ]
    first, copies = person.asked[0], person.asked[1]
    assert first["message"] == "What is your favourite colour?"
    assert first["requestedSchema"] == {
        "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]
    }
    assert first["_meta"]["onedoor/question"]["kind"] == "input"
    assert copies["message"] == "How many copies?" and copies["requestedSchema"] == COPIES


async def test_the_async_backend_asks_too(door_at: Any, sdk: Any) -> None:
    connect = door_at("-o", "scripted.mode=async")
    person = Person(("accept", {"decision": "allow_once"}), ("decline", None), ("accept", {"answer": "yes"}))
    async with connect(elicitation_callback=person) as session:
        replies = [
            await ask(session, sdk, ASK_RM),
            await ask(session, sdk, ASK_RM),
            await ask(session, sdk, "/question Ready?"),
        ]
    assert replies == [
        "Approved (allow_once): ran rm",
        "Not approved (reject_once): did not run rm",
        'You answered {"answer": "yes"}',
    ]


# -- a client without the capability: the door's ask_fallback policy ------------------------------


NO_CAPABILITY = "no one could be asked here (the client did not declare the elicitation capability)"


@pytest.mark.parametrize("policy", ["", "deny", "allow", "fail"])
async def test_a_client_without_elicitation_gets_the_policy(door_at: Any, sdk: Any, outcomes: Any, policy: str) -> None:
    """The ask_fallback policy answers, and the result says so: a text block naming each
    question and its policy answer, and structuredContent["answers"] (how: policy)."""
    connect = door_at(*(["-o", f"mcp.ask_fallback={policy}"] if policy else []))
    async with connect() as session:
        approval = await session.call_tool("ask", {"message": "/ask rm {}"})
        question = await session.call_tool("ask", {"message": "/question Colour?"})
        plain = await session.call_tool("ask", {"message": "hello"})
    assert not sdk.error(plain) and blocks(plain) == ["You said: hello (1 word, turn 1)"]
    assert {k: v for k, v in structured(plain).items() if k != "usage"} == {"reply": "You said: hello (1 word, turn 1)"}
    if policy == "fail":
        for result, asked in ((approval, "to run rm"), (question, '"Colour?"')):
            assert sdk.error(result) and "nobody can answer" in blocks(result)[0], blocks(result)
            assert blocks(result)[1:] == [
                f"The agent asked {asked}; {NO_CAPABILITY}, so the server's ask_fallback policy (fail) ended the run."
            ]
        outcomes.wait_for(lambda r: r["message"] == "/ask rm {}" and r["outcome"] == "RunFailed")
        return
    assert not sdk.error(approval) and not sdk.error(question)
    name = policy or "deny"
    decision = "allow_once" if policy == "allow" else "reject_once"
    expected = "Approved (allow_once): ran rm" if policy == "allow" else "Not approved (reject_once): did not run rm"
    assert blocks(approval) == [
        expected,
        f"The agent asked to run rm; {NO_CAPABILITY}, so the server's ask_fallback policy ({name}) answered {decision}.",
    ]
    assert structured(approval)["reply"] == expected
    assert answers_of(approval) == [
        {"kind": "approval", "prompt": "Allow the agent to run rm?", "tool": "rm", "outcome": decision, "how": "policy"}
    ]
    assert blocks(question) == [
        "No answer (decline)",
        f'The agent asked "Colour?"; {NO_CAPABILITY}, so the server\'s ask_fallback policy ({name}) answered decline.',
    ]
    assert answers_of(question) == [{"kind": "input", "prompt": "Colour?", "outcome": "decline", "how": "policy"}]


async def test_a_stateless_http_client_is_told_the_policy_answered(sdk: Any, start_http_server: Any) -> None:
    """Stateless HTTP keeps no session: the door does not know what the client declared,
    cannot ask it, and says so (not that the client lacks the capability)."""
    server = start_http_server("-o", "scripted.delay=0", "-o", "mcp.stateless=true")
    person = Person()  # never asked
    async with sdk.http(server.url, elicitation_callback=person) as session:
        result = await session.call_tool("ask", {"message": "/ask rm {}"})
    assert person.asked == [] and not sdk.error(result)
    assert blocks(result) == [
        "Not approved (reject_once): did not run rm",
        "The agent asked to run rm; no one could be asked here (a stateless HTTP connection keeps no session, so the "
        "client's capabilities are unknown), so the server's ask_fallback policy (deny) answered reject_once.",
    ]
    assert [record["how"] for record in answers_of(result)] == ["policy"]


async def test_answers_a_person_gave_carry_no_policy_note(door_at: Any, sdk: Any) -> None:
    """Answered by a person (elicitation): the result lists the answers (how: person) and
    says nothing of a policy; an answer that cannot be used is said to be so."""
    connect = door_at()
    person = Person(
        ("accept", {"decision": "allow_once"}),
        ("decline", None),
        ("accept", {"answer": "blue"}),
        ("accept", {"decision": "maybe"}),  # not a choice
    )
    async with connect(elicitation_callback=person) as session:
        results = [await session.call_tool("ask", {"message": message})
                   for message in ("/ask rm {}", "/ask rm {}", "/question Colour?", "/ask rm {}")]
    allowed, declined, answered, unusable = results
    assert not any(sdk.error(result) for result in results)
    assert blocks(allowed) == ["Approved (allow_once): ran rm"]
    assert blocks(declined) == ["Not approved (reject_once): did not run rm"]
    assert blocks(answered) == ['You answered {"answer": "blue"}']
    records = [answers_of(result) for result in (allowed, declined, answered)]
    assert all(record.pop("by", "").startswith("mcp") for [record] in records), records
    assert records == [
        [{"kind": "approval", "prompt": "Allow the agent to run rm?", "tool": "rm", "outcome": "allow_once", "how": "person"}],
        [{"kind": "approval", "prompt": "Allow the agent to run rm?", "tool": "rm", "outcome": "reject_once", "how": "person"}],
        [{"kind": "input", "prompt": "Colour?", "outcome": "accept", "value": {"answer": "blue"}, "how": "person"}],
    ]
    assert blocks(unusable) == [
        "Not approved (reject_once): did not run rm",
        "The agent asked to run rm; the client's answer could not be used, so the server answered reject_once.",
    ]
    assert [record["how"] for record in answers_of(unusable)] == ["policy"]


# -- the client goes away while it is being asked ------------------------------------------------


async def test_a_client_that_leaves_while_asked_ends_the_run(door_at: Any, sdk: Any, outcomes: Any) -> None:
    import anyio

    connect = door_at("-o", "max_concurrent_runs=1")
    person = Hangs()
    call: Any = None
    try:
        async with connect(elicitation_callback=person) as session:
            call = asyncio.ensure_future(session.call_tool("ask", {"message": "/ask deploy {}"}))
            try:
                await asyncio.wait_for(person.asked.wait(), 60)
            except TimeoutError:
                raise AssertionError("the door never asked the client") from None
        # Leaving ends the session (stdio: stdin closed; HTTP: DELETE), which cancels the run.
    except BaseExceptionGroup as group:
        # The 1.x stdio client may trip over the server's last answer arriving while it closes.
        if group.split((anyio.BrokenResourceError, anyio.ClosedResourceError))[1] is not None:
            raise
    assert call is not None
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    record = outcomes.wait_for(lambda r: r["message"] == "/ask deploy {}", timeout=60)
    # The 2.x client answers the open elicitation with an error ("Connection closed") as it
    # leaves: if that arrives before the end of the session, the answer is no and the run
    # ends at once without running the tool. (A client that just vanishes: see
    # test_mcp_elicitation_faults.py, where the run is always cancelled.)
    ended = ("cancelled", "end_turn") if sdk.major >= 2 else ("cancelled",)
    assert record["stop_reason"] in ended and record["workers_alive"] == 0, record
    if door_at.transport == "http":  # same server: its only run slot is free again
        async with connect(elicitation_callback=Person(("accept", {"decision": "allow_once"}))) as session:
            assert await ask(session, sdk, "/ask deploy {}") == "Approved (allow_once): ran deploy"


# -- MCP 2026-07-28: no server-initiated requests (see test_mcp_rounds.py for the rounds) ---------------


async def test_a_2026_07_28_connection_without_elicitation_gets_the_policy(sdk: Any) -> None:
    """An SDK 2.x client that negotiates with ``server/discover`` speaks 2026-07-28; without
    the elicitation capability it cannot be asked there either: the door answers by its policy."""
    if sdk.major < 2:
        pytest.skip("server/discover and the 2026-07-28 revision need the MCP SDK 2.x")
    from mcp import ClientSession
    from onedoor.composition import ServeContext
    from onedoor.testing import channel_pair, scripted_kernel
    from onedoor_door_mcp import McpOptions, door
    from onedoor_door_mcp.client import mcp_streams

    kernel = scripted_kernel(delay=0)
    door_end, client_end = channel_pair()
    ctx = ServeContext(kernel=kernel, options={"mcp": McpOptions(ask_fallback="allow")}, door_names=["mcp"])
    serving = asyncio.ensure_future(door().serve_channel(door_end, ctx))
    async with mcp_streams(client_end) as (read, write):
        async with ClientSession(read, write) as session:
            await session.discover()
            assert session.protocol_version == "2026-07-28"
            reply = await ask(session, sdk, ASK_RM)
    await client_end.close()
    await asyncio.wait_for(serving, 30)
    assert reply == "Approved (allow_once): ran rm"
    assert kernel.active_runs == 0


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_default_2x_client_without_a_callback_is_told_the_policy_answered(
    sdk: Any, start_http_server: Any, transport: str,
) -> None:
    """SDK 2.x's ``Client`` (mode "auto", the default) negotiates 2026-07-28; without an
    elicitation callback it declares no elicitation, and the result says the policy answered."""
    if sdk.major < 2:
        pytest.skip("the 2026-07-28 revision needs the MCP SDK 2.x")
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    if transport == "http":
        target: Any = start_http_server("-o", "scripted.delay=0").url
    else:
        argv = sdk.command("-o", "scripted.delay=0")
        target = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with Client(target) as client:
        assert client.session.protocol_version == "2026-07-28"
        await client.list_tools()  # the client checks structuredContent against the outputSchema listed
        result = await client.call_tool("ask", {"message": "/ask rm {}"})
    assert not sdk.error(result)
    assert blocks(result) == [
        "Not approved (reject_once): did not run rm",
        f"The agent asked to run rm; {NO_CAPABILITY}, so the server's ask_fallback policy (deny) answered reject_once.",
    ]
    assert answers_of(result) == [
        {"kind": "approval", "prompt": "Allow the agent to run rm?", "tool": "rm", "outcome": "reject_once", "how": "policy"}
    ]
