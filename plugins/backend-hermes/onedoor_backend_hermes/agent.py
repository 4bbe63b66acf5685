"""One hermes AIAgent per run, behind the port.

hermes' ``run_conversation`` blocks and reports through callbacks on its own threads.
:class:`HermesAgent` runs it on a helper thread, turns the callbacks into core events
on a queue, and yields them from the kernel's worker thread. Tool calls are matched by
call id; the ``None`` flush marker is dropped; newlines hermes puts in front of the
first text after a tool call are dropped when no text came before. ``cancel()`` calls
hermes' ``interrupt()``; the run then ends cancelled with the partial text.

Consent: hermes asks before a command it flags as dangerous (its approval callback);
with ``allow_machine_tools=ask`` every call of a machine tool asks first (a
``pre_tool_call`` hook, :mod:`.consent`). Both become approval questions through the
kernel (``context.ask_sync``). ``allow_always`` is hermes' ``session`` choice, kept for
this run only (each run has its own approval session, cleared when it ends).
"""

from __future__ import annotations

import json
import queue
import threading
from typing import Any, Iterable, Iterator, Sequence

from onedoor import (
    STOP_CANCELLED,
    STOP_MAX_TURNS,
    CancelToken,
    Event,
    Message,
    ReasoningDelta,
    RunContext,
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from onedoor.events import UsageReported
from onedoor.questions import Answer, Question, closing_answer

from .content import ContentRefused, accepted, hermes_content
from .embed import prints_to_stderr
from .options import ASK, HermesOptions
from .usage import HermesMeter

_END = object()
_JOIN_LIMIT = 30.0  # seconds to wait for hermes to return after an interrupt
# An answer as the value hermes' approval callback returns: "once", "session" (for the rest
# of the approval session, here the run), "always" (kept in hermes' config: never used) or "deny".
HERMES_CHOICE = {"allow_once": "once", "allow_always": "session"}


def to_hermes_history(history: Sequence[Message], accepts: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Core history as OpenAI-style messages, the shape hermes keeps: a user message with
    parts as content parts (kinds not in ``accepts`` as text)."""
    out: list[dict[str, Any]] = []
    for m in history:
        content: Any = m.content
        if m.role == "user" and m.parts:
            try:
                content = hermes_content(m.parts, accepts)
            except ContentRefused:
                content = m.content  # what hermes cannot take from the past goes as the text that names it
        item: dict[str, Any] = {"role": m.role, "content": content}
        if m.tool_calls:
            item["tool_calls"] = [
                {
                    "id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments or {})},
                }
                for c in m.tool_calls
            ]
        if m.tool_call_id is not None:
            item["tool_call_id"] = m.tool_call_id
        out.append(item)
    return out


def _result_value(text: Any) -> Any:
    if isinstance(text, str):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


class HermesAgent:
    """Sync agent: the kernel drives ``run`` on a worker thread and calls ``cancel()``."""

    def __init__(self, options: HermesOptions) -> None:
        self.options = options
        self.token = CancelToken()
        self._hermes: Any = None
        self._interrupted = False
        self._lock = threading.Lock()
        self._last_call: tuple[str, str] = ("", "")
        self._consented: set[str] = set()  # calls a person allowed (allow_machine_tools=ask)

    def cancel(self) -> None:
        self.token.cancel()
        self._interrupt()

    def _interrupt(self) -> None:
        with self._lock:
            hermes, first = self._hermes, not self._interrupted
            self._interrupted = True
        if hermes is not None and first:
            hermes.interrupt()

    def _started(self, events: "queue.SimpleQueue[Any]", call_id: Any, name: str, args: Any) -> None:
        self._last_call = (str(call_id), name)
        events.put(("start", call_id, name, args))

    def _ask(self, context: RunContext | None, events: "queue.SimpleQueue[Any]", question: Question) -> Answer:
        """Ask through the kernel from a hermes thread, after every event queued so far has reached it."""
        if context is None:
            return closing_answer(question, "policy")
        self._flush(events, context.cancel)
        return context.ask_sync(question)

    def _flush(self, events: "queue.SimpleQueue[Any]", token: CancelToken) -> None:
        """Wait until the run loop has handed every queued event to the kernel (a ToolStarted
        then reaches the door before the question about it)."""
        reached = threading.Event()
        events.put(("flush", reached))
        while not reached.wait(0.1):
            if token.cancelled or self._interrupted:
                return

    def _approval(self, context: RunContext | None, events: "queue.SimpleQueue[Any]") -> Any:
        """hermes' approval callback (dangerous commands): ask the door, through the kernel."""

        def approve(command: str, description: str, **_options: Any) -> str:
            call_id, name = self._last_call
            if call_id and call_id in self._consented:
                return "once"  # the person allowed this very call a moment ago (allow_machine_tools=ask)
            arguments = {"command": command, "description": description}
            question = Question.approval(call_id, name, arguments, prompt=f"Run a command hermes flags as dangerous ({description})?")
            return HERMES_CHOICE.get(self._ask(context, events, question).outcome, "deny")

        return approve

    def _consent_gate(self, context: RunContext | None, events: "queue.SimpleQueue[Any]") -> Any:
        """``allow_machine_tools=ask``: each call of a machine tool asks first (None = it may run)."""
        machine_tools = self.options.machine_tools

        def gate(call_id: str, name: str, arguments: Any) -> str | None:
            if name not in machine_tools:
                return None
            call_id = call_id or f"hermes-{name}"
            events.put(("start", call_id, name, arguments))  # hermes announces only calls that run
            answer = self._ask(context, events, Question.approval(call_id, name, arguments))
            if answer.allowed:
                self._consented.add(call_id)
                return None
            message = f"BLOCKED: {name} was not run: the user did not allow it ({answer.outcome})."
            events.put(("refused", call_id, name, message))
            return message

        return gate

    def _build(self, events: "queue.SimpleQueue[Any]") -> Any:
        from .embed import build_agent

        o = self.options
        kwargs: dict[str, Any] = {
            "model": o.model,
            "api_key": o.api_key or ("not-needed" if o.base_url else None),
            "quiet_mode": True,
            "skip_memory": True,
            "skip_context_files": True,
            "save_trajectories": False,
            "enabled_toolsets": list(o.toolsets),
            "max_iterations": o.max_iterations,
            "ephemeral_system_prompt": o.system_prompt or None,
            "stream_delta_callback": lambda text: events.put(("text", text)),
            "reasoning_callback": lambda text: events.put(("reasoning", text)),
            "tool_start_callback": lambda call_id, name, args: self._started(events, call_id, name, args),
            "tool_complete_callback": lambda call_id, name, args, result: events.put(("done", call_id, name, result)),
        }
        if o.base_url:
            kwargs.update(base_url=o.base_url, provider="custom", api_mode="chat_completions")
        else:
            kwargs.update(provider=o.provider)
        hermes = build_agent(o.home, o.context_length, **kwargs)
        if o.vision is True:
            # hermes asks its config and models.dev whether the model reads images; the
            # operator said it does (otherwise hermes swaps each image for a description)
            hermes._model_supports_vision = lambda: True
        return hermes

    def run(self, message: str, *, history: Sequence[Message] | None = None, context: RunContext | None = None) -> Iterator[Event]:
        run_id = context.run_id if context is not None else "hermes"
        token = context.cancel if context is not None else self.token
        yield RunStarted(run_id)
        kinds = accepted(self.options.vision, self.options.base_url)
        prompt: Any = message
        if context is not None and context.content:
            try:
                prompt = hermes_content(context.content, kinds)
            except ContentRefused as exc:
                yield RunFailed(run_id, str(exc))
                return
        events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        hermes = self._build(events)
        with self._lock:
            self._hermes = hermes
            interrupt_now = self._interrupted
        if interrupt_now or token.cancelled:
            hermes.interrupt()
        outcome: dict[str, Any] = {}
        past = to_hermes_history(history or (), kinds)
        meter = HermesMeter(hermes)

        approve = self._approval(context, events)
        gate = self._consent_gate(context, events) if self.options.allow_machine_tools == ASK else None
        session = f"onedoor-{run_id}"

        def converse() -> None:
            try:
                _prepare_thread(approve, session, gate, self.options.machine_tools)  # its tool threads inherit it
                with prints_to_stderr():
                    outcome["result"] = hermes.run_conversation(prompt, conversation_history=past)
            except BaseException as exc:  # noqa: BLE001 - reported as RunFailed
                outcome["error"] = exc
            finally:
                _end_session(session, gate, self.options.machine_tools)
                events.put(_END)

        thread = threading.Thread(target=converse, name=f"hermes-{run_id[:8]}", daemon=True)
        thread.start()
        parts: list[str] = []
        open_tools: dict[str, str] = {}
        try:
            while True:
                try:
                    item = events.get(timeout=0.1)
                except queue.Empty:
                    if token.cancelled:
                        self._interrupt()
                    continue
                if item is _END:
                    break
                if item[0] in ("start", "done"):  # a model call has ended: what it used comes first
                    used = meter.step()
                    if used:
                        yield UsageReported(used)
                yield from self._map(item, parts, open_tools)
        finally:
            if thread.is_alive():  # closed early (kernel cancel): stop hermes and wait for it
                self._interrupt()
                thread.join(_JOIN_LIMIT)
            _close(hermes)
        for call_id, name in list(open_tools.items()):
            yield ToolFinished(call_id, name, "the tool call did not finish", True)
        yield from _ending(run_id, outcome, parts, meter.step(), self._interrupted or token.cancelled)

    def _map(self, item: tuple, parts: list[str], open_tools: dict[str, str]) -> Iterator[Event]:
        kind = item[0]
        if kind == "text":
            text = item[1]
            if text is None:  # hermes' flush marker before tool calls
                return
            if not parts:
                text = text.lstrip("\r\n")
            if text:
                parts.append(text)
                yield TextDelta(text)
        elif kind == "reasoning":
            if item[1]:
                yield ReasoningDelta(item[1])
        elif kind == "start":
            _, call_id, name, args = item
            call_id = str(call_id or f"hermes-{len(open_tools)}-{name}")
            if call_id not in open_tools:
                open_tools[call_id] = name
                yield ToolStarted(call_id, name, args if args is not None else {})
        elif kind in ("done", "refused"):
            _, call_id, name, result = item
            if call_id in open_tools:
                open_tools.pop(call_id)
                is_error = kind == "refused" or (isinstance(result, str) and result.startswith(("Error", "error:")))
                yield ToolFinished(call_id, name, _result_value(result), is_error)
        elif kind == "flush":
            item[1].set()  # every event before it has been handed to the kernel


def _ending(run_id: str, outcome: dict[str, Any], parts: list[str], usage: Any, cancelled: bool) -> Iterator[Event]:
    """The terminal event (with the usage not reported yet), after hermes returned."""
    error = outcome.get("error")
    result = outcome.get("result") or {}
    if error is not None:
        yield RunFailed(run_id, f"hermes failed: {type(error).__name__}: {error}", usage)
        return
    if result.get("interrupted") or cancelled:
        yield RunFinished(run_id, "".join(parts), STOP_CANCELLED, usage)
        return
    if result.get("failed"):
        yield RunFailed(run_id, str(result.get("error") or result.get("final_response") or "hermes reported a failure"), usage)
        return
    final = result.get("final_response")
    if not parts and isinstance(final, str) and final:
        parts.append(final)  # the model did not stream
        yield TextDelta(final)
    reason = str(result.get("turn_exit_reason") or "")
    stop = STOP_MAX_TURNS if reason == "budget_exhausted" or "max_iterations" in reason else "end_turn"
    yield RunFinished(run_id, "".join(parts), stop, usage)


def _prepare_thread(callback: Any, session: str, gate: Any, machine_tools: frozenset[str]) -> None:
    """Route hermes' approval prompts on this thread to ``callback``, in an approval session
    of its own; with a consent ``gate``, every machine tool call goes to it first.

    Without a human in the loop hermes approves dangerous commands itself (fail-open);
    marking the thread interactive makes it ask, and the callback asks the door.
    """
    from tools.approval import set_current_session_key, set_hermes_interactive_context
    from tools.terminal_tool import set_approval_callback

    set_approval_callback(callback)
    set_hermes_interactive_context(True)
    set_current_session_key(session)  # hermes' "session" approvals: this run's, not the process'
    if gate is not None:
        from .consent import open_gate

        open_gate(gate, machine_tools)


def _end_session(session: str, gate: Any, machine_tools: frozenset[str]) -> None:
    """Forget what was approved for the rest of the run."""
    if gate is not None:
        from .consent import close_gate

        close_gate(gate, machine_tools)
    try:
        from tools.approval import clear_session

        clear_session(session)
    except Exception:  # noqa: BLE001 - cleanup must not mask the run's outcome
        pass


def _close(hermes: Any) -> None:
    close = getattr(hermes, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # noqa: BLE001 - cleanup must not mask the run's outcome
            pass
