"""Core events -> AG-UI events: a pure translation, one run at a time.

:class:`Translator` turns the kernel's event stream into AG-UI 1.0 events (plain dicts
with camelCase keys, ready for JSON), in order, as they happen:

=====================  ===============================================================
core event             AG-UI events
=====================  ===============================================================
RunStarted             RUN_STARTED (threadId, runId, protocolVersion)
TextDelta              TEXT_MESSAGE_START once, then TEXT_MESSAGE_CONTENT
ReplyPart              the part named in the reply's text (as ``text_of`` names it, so the
                       text equals the thread's), and ACTIVITY_SNAPSHOT ``onedoor.part``
                       carrying it as an AG-UI part (assistant messages hold text only)
ReasoningDelta         REASONING_START + REASONING_MESSAGE_START once, then
                       REASONING_MESSAGE_CONTENT
ToolStarted            TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END
ToolFinished           TOOL_CALL_RESULT (content: its text, or with parts a list of parts)
StateSnapshot          STATE_SNAPSHOT; the kernel's first one is left out when it equals
                       the state the client sent (``client_state``)
StateDelta             STATE_DELTA
RunFinished            RUN_FINISHED with outcome success (pendingToolCallIds for
                       frontend tools left open) or cancelled; stop_reason
                       ``suspended``: the interrupt outcome (:mod:`.interrupts`); ``usage``
RunFailed              RUN_ERROR (``usage``)
QuestionAsked          nothing yet: its interrupt goes into the RUN_FINISHED that follows
QuestionAnswered       CUSTOM ``onedoor.question_answered`` (interruptId, outcome, how)
=====================  ===============================================================

A run resumed after an interrupt is a new AG-UI run (the resuming input's ``runId``)
whose RUN_STARTED names the interrupted run in ``parentRunId``. Tool calls the
interrupted run left open (the one waiting for approval) are ``carried`` over: when one
finishes, the call is reopened (TOOL_CALL_START with the same id, name and parent, then
TOOL_CALL_END, no arguments) so that its TOOL_CALL_RESULT refers to a call of this run.

At the end (``final_state``, a stored thread's run): a STATE_SNAPSHOT of the thread's state
when it is not what the stream's events made (another client changed it meanwhile, or the
run's changes could not be kept), and ``metadata.onedoor.stateVersion`` on RUN_FINISHED /
RUN_ERROR: the version a client's next state is based on. ``join``: a MESSAGES_SNAPSHOT
right after RUN_STARTED, for a client that does not hold the thread's history.

Open text and reasoning messages are closed before anything that must not nest in them
and before the terminal event. There is exactly one terminal event: events after it are
dropped, and :meth:`Translator.finish` supplies one if the core stream never did.
Frames are written with :func:`onedoor.wire.encode_json`, so a lone surrogate in a
backend's text (half an emoji split across two deltas) leaves as a ``\\u`` escape and the
client's joined text gets the emoji back.
It imports nothing but the standard library and the kernel's events, questions and wire policy.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

from onedoor import (
    STOP_CANCELLED,
    STOP_PENDING_TOOLS,
    STOP_SUSPENDED,
    QuestionAnswered,
    QuestionAsked,
    ReasoningDelta,
    ReplyPart,
    RunFailed,
    RunFinished,
    RunStarted,
    StateDelta,
    StateSnapshot,
    TextDelta,
    ToolFinished,
    ToolStarted,
    WireError,
    decode_json,
    encode_json,
)

from .content import tool_content
from .extras_out import token_usage, with_version
from .interrupts import question_to_interrupt
from .texts import TextMessages

PROTOCOL_VERSION = "1.0"

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def encode_sse(event: dict[str, Any]) -> bytes:
    """One SSE frame for one AG-UI event, framed with a blank line (``\\n\\n``)."""
    return b"data: " + encode_json(event) + b"\n\n"


def encode_all(events: list[dict[str, Any]]) -> bytes:
    """SSE frames for several AG-UI events."""
    return b"".join(map(encode_sse, events))


def _arguments_text(arguments: Any) -> str:
    """Tool arguments as JSON text: a string that already holds a JSON object is kept."""
    if arguments is None:
        return "{}"
    if isinstance(arguments, str):
        try:
            if isinstance(decode_json(arguments), dict):
                return arguments
        except WireError:
            pass
    return _dumps(arguments)


def _result_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    return _dumps(result)


class Translator(TextMessages):
    """Translate one run's core events into AG-UI events.

    ``record`` keeps the messages this run produces so that :meth:`snapshot` can
    build a MESSAGES_SNAPSHOT (the input's messages plus this run's). A resumed run gets
    ``parent_run_id`` (the interrupted AG-UI run) and ``carried``: the tool calls that
    run left open, ``{call_id: (name, parent_message_id)}`` (see :meth:`open_calls`).
    ``snapshot_ids`` (a stored thread's runs): the snapshot numbers this run's messages
    after the input's (``h5``, ``h6``…) instead of using their streamed ids, so that a
    client that merges snapshots by id (the official one keeps the messages it knows in
    place and appends the others) ends with the thread in its order. ``client_state``,
    ``final_state`` and ``join``: see the module docstring (``final_state()`` returns
    ``(stored state, its version, the state the stream made)``, or None).
    """

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        *,
        id_prefix: str | None = None,
        record: bool = False,
        input_messages: Iterable[dict[str, Any]] = (),
        parent_run_id: str | None = None,
        carried: dict[str, tuple[str, str]] | None = None,
        snapshot_ids: str | None = None,
        client_state: dict[str, Any] | None = None,
        final_state: Callable[[], tuple[dict[str, Any], int, dict[str, Any] | None] | None] | None = None,
        join: bool = False,
    ) -> None:
        self.thread_id = thread_id
        self.client_state = client_state
        self.final_state = final_state
        self.join = join
        self._fresh = True  # nothing but RUN_STARTED translated yet
        self.run_id = run_id
        self.parent_run_id = parent_run_id
        self.carried = dict(carried or {})  # open calls of the interrupted run: id -> (name, parent)
        self.parents: dict[str, str] = {}  # tool call id -> its parent message id
        self.interrupts: list[dict[str, Any]] = []  # from QuestionAsked, for the interrupt outcome
        super().__init__(id_prefix, record, input_messages, snapshot_ids)
        self.started = False
        self.ended = False
        self.pending: dict[str, str] = {}  # tool calls started without a result: id -> name
        self.outcome: dict[str, Any] | None = None  # the terminal event, once sent

    # -- the translation --------------------------------------------------------------------
    def feed_sse(self, event: Any) -> bytes:
        """:meth:`feed`, encoded as SSE frames (the same bytes as :func:`encode_sse`).

        The common case, one more delta of an open text message, skips building a dict.
        """
        if type(event) is TextDelta and self.text_id is not None and not self.ended and not self._newline_due:
            text = event.text
            if not text:
                return b""
            if self.record:
                self._parts[self.text_id].append(text)
            self._tail = text[-1]
            return self._content_head + encode_json(text) + b"}\n\n"
        out = self.feed(event)
        if len(out) == 1:
            return encode_sse(out[0])
        return b"".join(map(encode_sse, out))

    def feed(self, event: Any) -> list[dict[str, Any]]:
        """The AG-UI events for one core event (possibly none)."""
        if self.ended:
            return []
        kind = type(event)
        if kind is RunStarted:
            return self._start() if not self.started else []
        out = self._start() if not self.started else []
        fresh, self._fresh = self._fresh, False
        if kind is TextDelta:
            self._text(event.text, out)
        elif kind is StateSnapshot or kind is StateDelta:
            self._state(event, fresh, out)
        elif kind is ReplyPart:
            self._reply_part(event, out)
        elif kind is ReasoningDelta:
            self._reasoning(event.text, out)
        elif kind is ToolStarted:
            self._tool_started(event, out)
        elif kind is ToolFinished:
            self._tool_finished(event, out)
        elif kind is RunFinished:
            self._finished(event.stop_reason, out, event.usage)
        elif kind is RunFailed:
            self._failed(str(event.error), out, usage=event.usage)
        elif kind is QuestionAsked:
            self.interrupts.append(question_to_interrupt(event.question))
        elif kind is QuestionAnswered:
            answer = event.answer
            value = {"interruptId": answer.question_id, "outcome": answer.outcome, "how": answer.how}
            out.append({"type": "CUSTOM", "name": "onedoor.question_answered", "value": value})
        return out

    def _state(self, event: StateSnapshot | StateDelta, fresh: bool, out: list[dict[str, Any]]) -> None:
        if isinstance(event, StateDelta):
            out.append({"type": "STATE_DELTA", "delta": list(event.ops)})
        elif not (fresh and self.client_state is not None and event.state == self.client_state):
            out.append({"type": "STATE_SNAPSHOT", "snapshot": event.state})

    def open_calls(self) -> dict[str, tuple[str, str]]:
        """Tool calls started (here or carried over) without a result: id -> (name, parent message id)."""
        calls = dict(self.carried)
        calls.update({cid: (name, self.parents[cid]) for cid, name in self.pending.items()})
        return calls

    def finish(self, error: str | None = None) -> list[dict[str, Any]]:
        """The terminal events if none was sent yet: RUN_ERROR with ``error``, else
        RUN_FINISHED with the cancelled outcome."""
        if self.ended:
            return []
        out = self._start() if not self.started else []
        if error is not None:
            self._failed(error, out)
        else:
            self._finished(STOP_CANCELLED, out)
        return out

    # -- pieces -----------------------------------------------------------------------------
    def _start(self) -> list[dict[str, Any]]:
        self.started = True
        event = {"type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id, "protocolVersion": PROTOCOL_VERSION}
        if self.parent_run_id is not None:
            event["parentRunId"] = self.parent_run_id
        return [event, self.snapshot()] if self.join else [event]

    def _tool_started(self, event: ToolStarted, out: list[dict[str, Any]]) -> None:
        self._close_reasoning(out)
        self._close_text(out)
        parent = self.last_assistant
        if parent is None:
            parent = self.last_assistant = self._new_id()
            if self.record:
                self._remember({"id": parent, "role": "assistant"})
        call_id = event.call_id
        args = _arguments_text(event.arguments)
        out.append({"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": event.name, "parentMessageId": parent})
        if args:
            out.append({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": args})
        out.append({"type": "TOOL_CALL_END", "toolCallId": call_id})
        self.pending[call_id] = event.name
        self.parents[call_id] = parent
        if self.record:
            message = self._by_id[parent]
            message.setdefault("toolCalls", []).append(
                {"id": call_id, "type": "function", "function": {"name": event.name, "arguments": args}}
            )

    def _tool_finished(self, event: ToolFinished, out: list[dict[str, Any]]) -> None:
        carried = self.carried.pop(event.call_id, None) if event.call_id not in self.pending else None
        if self.pending.pop(event.call_id, None) is None and carried is None:
            return  # no open call with that id: nothing a client could attach it to
        self._close_reasoning(out)
        self._close_text(out)
        if carried is not None:  # a call of the interrupted run: reopen it in this one
            name, parent = carried
            out.append({"type": "TOOL_CALL_START", "toolCallId": event.call_id, "toolCallName": name, "parentMessageId": parent})
            out.append({"type": "TOOL_CALL_END", "toolCallId": event.call_id})
        mid = self._new_id()
        self.last_assistant = None
        text = _result_text(event.result)
        content = tool_content(text, event.parts) if event.parts else text
        result: dict[str, Any] = {"type": "TOOL_CALL_RESULT", "messageId": mid, "toolCallId": event.call_id, "content": content, "role": "tool"}
        if event.is_error:
            result["metadata"] = {"isError": True}
        out.append(result)
        if self.record:
            message: dict[str, Any] = {"id": mid, "role": "tool", "toolCallId": event.call_id, "content": content}
            if event.is_error:
                message["error"] = text
            self._remember(message)

    def _finished(self, stop_reason: str, out: list[dict[str, Any]], usage: Any = ()) -> None:
        self._close_all(out)
        if stop_reason == STOP_SUSPENDED:
            if not self.interrupts:  # never from the kernel: a suspended ending follows its question
                self._failed("the run stopped for a question the door never saw", out, "no_interrupt")
                return
            outcome: dict[str, Any] = {"type": "interrupt", "interrupts": list(self.interrupts)}
        elif stop_reason == STOP_CANCELLED:
            outcome = {"type": "cancelled"}
        elif stop_reason == STOP_PENDING_TOOLS and self.pending:
            outcome = {"type": "success", "pendingToolCallIds": list(self.pending)}
        else:
            outcome = {"type": "success"}
        if self.record:
            out.append(self.snapshot())
        event: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id, "outcome": outcome}
        if usage:
            event["usage"] = token_usage(usage)
        if stop_reason != STOP_SUSPENDED:  # a parked run keeps its state changes until it ends
            self._end_state(event, out)
        out.append(event)
        self.outcome = event
        self.ended = True

    def _failed(self, error: str, out: list[dict[str, Any]], code: str = "run_failed", usage: Any = ()) -> None:
        self._close_all(out)
        event: dict[str, Any] = {"type": "RUN_ERROR", "message": error or "the run failed", "code": code}
        if usage:
            event["usage"] = token_usage(usage)
        self._end_state(event, out)
        out.append(event)
        self.outcome = event
        self.ended = True

    def _end_state(self, terminal: dict[str, Any], out: list[dict[str, Any]]) -> None:
        """The thread's state at the end, when the stream did not make it, and its version."""
        found = self.final_state() if self.final_state is not None else None
        if found is None:
            return
        stored, version, streamed = found
        if stored != (streamed if streamed is not None else {}):
            out.append({"type": "STATE_SNAPSHOT", "snapshot": stored})
        with_version(terminal, version)



def translate(
    events: Iterable[Any], thread_id: str = "thread", run_id: str = "run", **kwargs: Any
) -> list[dict[str, Any]]:
    """Translate a whole core event sequence; always ends with one terminal event."""
    translator = Translator(thread_id, run_id, **kwargs)
    out: list[dict[str, Any]] = []
    for event in events:
        out += translator.feed(event)
    out += translator.finish("the run ended without a terminal event")
    return out
