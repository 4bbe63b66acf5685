"""Core events -> AG-UI events: a pure translation, one run at a time.

:class:`Translator` turns the kernel's event stream into AG-UI 1.0 events (plain dicts
with camelCase keys, ready for JSON), in order, as they happen:

=====================  ===============================================================
core event             AG-UI events
=====================  ===============================================================
RunStarted             RUN_STARTED (threadId, runId, protocolVersion)
TextDelta              TEXT_MESSAGE_START once, then TEXT_MESSAGE_CONTENT
ReasoningDelta         REASONING_START + REASONING_MESSAGE_START once, then
                       REASONING_MESSAGE_CONTENT
ToolStarted            TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END
ToolFinished           TOOL_CALL_RESULT
RunFinished            RUN_FINISHED with outcome success (pendingToolCallIds for
                       frontend tools left open) or cancelled; stop_reason
                       ``suspended``: the interrupt outcome (:mod:`.interrupts`)
RunFailed              RUN_ERROR
QuestionAsked          nothing yet: its interrupt goes into the RUN_FINISHED that follows
QuestionAnswered       CUSTOM ``onedoor.question_answered`` (interruptId, outcome, how)
=====================  ===============================================================

A run resumed after an interrupt is a new AG-UI run (the resuming input's ``runId``)
whose RUN_STARTED names the interrupted run in ``parentRunId``. Tool calls the
interrupted run left open (the one waiting for approval) are ``carried`` over: when one
finishes, the call is reopened (TOOL_CALL_START with the same id, name and parent, then
TOOL_CALL_END, no arguments) so that its TOOL_CALL_RESULT refers to a call of this run.

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
import uuid
from typing import Any, Iterable

from onedoor import (
    STOP_CANCELLED,
    STOP_PENDING_TOOLS,
    STOP_SUSPENDED,
    QuestionAnswered,
    QuestionAsked,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
    WireError,
    decode_json,
    encode_json,
)

from .interrupts import question_to_interrupt

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


class Translator:
    """Translate one run's core events into AG-UI events.

    ``record`` keeps the messages this run produces so that :meth:`snapshot` can
    build a MESSAGES_SNAPSHOT (the input's messages plus this run's). A resumed run gets
    ``parent_run_id`` (the interrupted AG-UI run) and ``carried``: the tool calls that
    run left open, ``{call_id: (name, parent_message_id)}`` (see :meth:`open_calls`).
    ``snapshot_ids`` (a stored thread's runs): the snapshot numbers this run's messages
    after the input's (``h5``, ``h6``…) instead of using their streamed ids, so that a
    client that merges snapshots by id (the official one keeps the messages it knows in
    place and appends the others) ends with the thread in its order.
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
    ) -> None:
        self.thread_id = thread_id
        self.snapshot_ids = snapshot_ids  # renumber this run's messages in a snapshot: f"{snapshot_ids}{position}"
        self.run_id = run_id
        self.parent_run_id = parent_run_id
        self.carried = dict(carried or {})  # open calls of the interrupted run: id -> (name, parent)
        self.parents: dict[str, str] = {}  # tool call id -> its parent message id
        self.interrupts: list[dict[str, Any]] = []  # from QuestionAsked, for the interrupt outcome
        self.prefix = id_prefix if id_prefix is not None else f"m{uuid.uuid4().hex[:12]}-"
        self._count = 0
        self.started = False
        self.ended = False
        self.text_id: str | None = None  # open text message
        self.reasoning_id: str | None = None  # open reasoning message
        self.last_assistant: str | None = None  # assistant message that is last in the client's list
        self.pending: dict[str, str] = {}  # tool calls started without a result: id -> name
        self.record = record
        self.input_messages = list(input_messages)
        self.messages: list[dict[str, Any]] = []  # this run's messages, when recording
        self._by_id: dict[str, dict[str, Any]] = {}
        self._parts: dict[str, list[str]] = {}
        self._content_head = b""  # the start of a CONTENT frame for the open text message
        self.outcome: dict[str, Any] | None = None  # the terminal event, once sent

    # -- ids and recording ----------------------------------------------------------------
    def _new_id(self) -> str:
        self._count += 1
        return f"{self.prefix}{self._count}"

    def _remember(self, message: dict[str, Any], text: bool = False) -> None:
        self.messages.append(message)
        self._by_id[message["id"]] = message
        if text:
            self._parts[message["id"]] = []

    # -- the translation --------------------------------------------------------------------
    def feed_sse(self, event: Any) -> bytes:
        """:meth:`feed`, encoded as SSE frames (the same bytes as :func:`encode_sse`).

        The common case, one more delta of an open text message, skips building a dict.
        """
        if type(event) is TextDelta and self.text_id is not None and not self.ended:
            text = event.text
            if not text:
                return b""
            if self.record:
                self._parts[self.text_id].append(text)
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
        if kind is TextDelta:
            text = event.text
            if not text:
                return []
            if self.text_id is not None:
                if self.record:
                    self._parts[self.text_id].append(text)
                return [{"type": "TEXT_MESSAGE_CONTENT", "messageId": self.text_id, "delta": text}]
            out = self._start() if not self.started else []
            self._close_reasoning(out)
            mid = self.text_id = self.last_assistant = self._new_id()
            self._content_head = b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":' + encode_json(mid) + b',"delta":'
            out.append({"type": "TEXT_MESSAGE_START", "messageId": mid, "role": "assistant"})
            out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": text})
            if self.record:
                self._remember({"id": mid, "role": "assistant", "content": ""}, text=True)
                self._parts[mid].append(text)
            return out
        if kind is RunStarted:
            return self._start() if not self.started else []
        out = self._start() if not self.started else []
        if kind is ReasoningDelta:
            self._reasoning(event.text, out)
        elif kind is ToolStarted:
            self._tool_started(event, out)
        elif kind is ToolFinished:
            self._tool_finished(event, out)
        elif kind is RunFinished:
            self._finished(event.stop_reason, out)
        elif kind is RunFailed:
            self._failed(str(event.error), out)
        elif kind is QuestionAsked:
            self.interrupts.append(question_to_interrupt(event.question))
        elif kind is QuestionAnswered:
            answer = event.answer
            value = {"interruptId": answer.question_id, "outcome": answer.outcome, "how": answer.how}
            out.append({"type": "CUSTOM", "name": "onedoor.question_answered", "value": value})
        return out

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
        return [event]

    def _close_text(self, out: list[dict[str, Any]]) -> None:
        if self.text_id is not None:
            out.append({"type": "TEXT_MESSAGE_END", "messageId": self.text_id})
            if self.record:
                self._by_id[self.text_id]["content"] = "".join(self._parts.pop(self.text_id))
            self.text_id = None

    def _close_reasoning(self, out: list[dict[str, Any]]) -> None:
        rid = self.reasoning_id
        if rid is not None:
            out.append({"type": "REASONING_MESSAGE_END", "messageId": rid})
            out.append({"type": "REASONING_END", "messageId": rid})
            if self.record:
                self._by_id[rid]["content"] = "".join(self._parts.pop(rid))
            self.reasoning_id = None

    def _reasoning(self, text: str, out: list[dict[str, Any]]) -> None:
        if not text:
            return
        if self.reasoning_id is None:
            self._close_text(out)
            rid = self.reasoning_id = self._new_id()
            self.last_assistant = None
            out.append({"type": "REASONING_START", "messageId": rid})
            out.append({"type": "REASONING_MESSAGE_START", "messageId": rid, "role": "reasoning"})
            if self.record:
                self._remember({"id": rid, "role": "reasoning", "content": ""}, text=True)
        if self.record:
            self._parts[self.reasoning_id].append(text)
        out.append({"type": "REASONING_MESSAGE_CONTENT", "messageId": self.reasoning_id, "delta": text})

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
        content = _result_text(event.result)
        result: dict[str, Any] = {"type": "TOOL_CALL_RESULT", "messageId": mid, "toolCallId": event.call_id, "content": content, "role": "tool"}
        if event.is_error:
            result["metadata"] = {"isError": True}
        out.append(result)
        if self.record:
            message: dict[str, Any] = {"id": mid, "role": "tool", "toolCallId": event.call_id, "content": content}
            if event.is_error:
                message["error"] = content
            self._remember(message)

    def _close_all(self, out: list[dict[str, Any]]) -> None:
        self._close_reasoning(out)
        self._close_text(out)

    def _finished(self, stop_reason: str, out: list[dict[str, Any]]) -> None:
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
        event = {"type": "RUN_FINISHED", "threadId": self.thread_id, "runId": self.run_id, "outcome": outcome}
        out.append(event)
        self.outcome = event
        self.ended = True

    def _failed(self, error: str, out: list[dict[str, Any]], code: str = "run_failed") -> None:
        self._close_all(out)
        event = {"type": "RUN_ERROR", "message": error or "the run failed", "code": code}
        out.append(event)
        self.outcome = event
        self.ended = True

    def snapshot(self) -> dict[str, Any]:
        """A MESSAGES_SNAPSHOT of the input's messages plus this run's so far."""
        messages = list(self.input_messages)
        for message in self.messages:
            copy = dict(message)
            parts = self._parts.get(message["id"])
            if parts is not None:
                copy["content"] = "".join(parts)
            if self.snapshot_ids is not None:
                copy["id"] = f"{self.snapshot_ids}{len(messages)}"
            messages.append(copy)
        return {"type": "MESSAGES_SNAPSHOT", "messages": messages}


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
