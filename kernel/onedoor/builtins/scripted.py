"""The scripted backend: deterministic, needs no key, emits every event kind.

A normal run thinks (ReasoningDelta), calls a ``word_count`` tool (ToolStarted /
ToolFinished) and streams its reply word by word. Options shape it for tests and
benchmarks (``deltas``, ``delay``, ``mode``…); directives at the start of a message do
the same per run, so a test can drive any door without restarting a server:

``/fail``            raise an exception half-way through the reply
``/error``           end the run with the backend's own RunFailed
``/hang``            stop sending events until cancelled (exercises idle timeout / cancel)
``/slow``            pace every event by 50 ms
``/long N``          stream a reply of N deltas
``/call NAME JSON``  call the client (frontend) tool NAME with JSON arguments and end the
                     run with stop_reason ``pending_tools``
``/ask NAME JSON``   announce a call of tool NAME, ask for approval, run it (result
                     ``{"ran": NAME}``) or not (an error result), and say which
``/question TEXT``   ask TEXT as a free-form question (the answer: ``{"answer": "…"}``), or
                     ``/question {"prompt": …, "schema": …}`` with any form; the reply
                     repeats the answer
``/state JSON``      change the run's shared state: a JSON object replaces it
                     (StateSnapshot), a list of JSON Patch operations patches it
                     (StateDelta); may be given more than once
``/image``           the reply carries an image (a 1×1 PNG, ReplyPart)
``/draw``            call a ``draw`` tool whose result is an image (ToolFinished.parts)

When the last history message is a tool result, the reply reports it. A message with
parts (images, files…) is answered with what arrived ("Received: 1 image (image/png,
1,234 bytes, cat.png)"), and a run with a shared state ends its reply with it
("State: {…}"). Every run reports usage it can count (model ``scripted``): input tokens
are the words of the message and history, output tokens the deltas it sent.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator, Generator, Iterator, Literal, Sequence

from ..content import MEDIA_KINDS
from ..events import (
    STOP_PENDING_TOOLS,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from ..port import CancelToken, Message, RunContext
from ..questions import Answer, Question
from ..wire import encode_json_text
from .scripted_extras import DOT_PNG, Usage, changed, describe_parts, json_prefix, state_change

if TYPE_CHECKING:
    from ..events import Event

ALL_ACCEPTED = ",".join((*MEDIA_KINDS, "resource"))


@dataclass
class ScriptedOptions:
    reply: str = field(default="", metadata={"help": "fixed reply text (default: one built from the message)"})
    deltas: int = field(default=0, metadata={"help": "stream exactly this many text deltas (0: one per word)"})
    delay: float = field(default=0.0, metadata={"help": "seconds between events"})
    mode: Literal["sync", "async"] = field(default="sync", metadata={"help": "sync (worker thread) or async agent"})
    tool: bool = field(default=True, metadata={"help": "call the word_count tool"})
    reasoning: bool = field(default=True, metadata={"help": "emit reasoning deltas"})
    fail: Literal["", "start", "middle"] = field(default="", metadata={"help": "raise at the start or middle"})
    accepts: str = field(default=ALL_ACCEPTED, metadata={
        "help": "content kinds it takes besides text, comma-separated (image, audio, video, document, resource); "
                "empty: text only (the kernel refuses the others)"})
    usage: bool = field(default=True, metadata={"help": "report usage (words in, deltas out)"})

    def __post_init__(self) -> None:
        if self.deltas < 0:
            raise ValueError("deltas must be 0 or more")
        if self.delay < 0:
            raise ValueError("delay must be 0 or more")
        kinds = {k.strip() for k in self.accepts.split(",") if k.strip()}
        unknown = kinds - {*MEDIA_KINDS, "resource"}
        if unknown:
            raise ValueError(f"accepts: unknown kinds {', '.join(sorted(unknown))}")


class ScriptedFailure(RuntimeError):
    """Raised on purpose by ``/fail`` and ``fail=…``."""


# A plan is a sequence of steps: an Event, a float (pause that long), "hang" or an exception.
Step = Any


def _count_words(count: int) -> str:
    return f"{count} word" if count == 1 else f"{count} words"


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w + " " for w in words[:-1]] + [words[-1]]


def _parse_directives(message: str, options: ScriptedOptions) -> tuple[dict[str, Any], str]:
    flags: dict[str, Any] = {"delay": options.delay, "deltas": options.deltas, "fail": options.fail}
    rest = message.strip()
    while rest.startswith("/"):
        word, _, tail = rest.partition(" ")
        if word == "/fail":
            flags["fail"] = "middle"
        elif word == "/error":
            flags["error"] = True
        elif word == "/hang":
            flags["hang"] = True
        elif word == "/slow":
            flags["delay"] = max(flags["delay"], 0.05)
        elif word == "/long":
            count, _, tail = tail.partition(" ")
            flags["deltas"] = int(count) if count.isdigit() else 200
        elif word in ("/call", "/ask"):
            name, _, tail = tail.partition(" ")
            raw, tail = tail, ""
            try:
                args = json.loads(raw) if raw.strip() else {}
            except json.JSONDecodeError:
                args = {"input": raw}
            flags[word[1:]] = (name, args)
        elif word == "/question":
            flags["question"], tail = _question(tail), ""
        elif word == "/state":
            change, tail = json_prefix(tail)
            flags.setdefault("state", []).append(change)
        elif word in ("/image", "/draw"):
            flags[word[1:]] = True
        else:
            break
        rest = tail.strip()
    return flags, rest


def _question(text: str) -> Question:
    text = text.strip()
    if text.startswith("{"):
        try:
            spec = json.loads(text)
            return Question.input(str(spec.get("prompt", "")), spec.get("schema"))
        except (json.JSONDecodeError, AttributeError, ValueError):
            pass
    return Question.input(text or "What should I do?")


def plan(
    message: str, history: Sequence[Message], context: RunContext | None, options: ScriptedOptions
) -> Generator[Step, Answer | None, None]:
    """The steps of one run; shared by the sync and async agents. A Question step is
    sent back its Answer."""
    run_id = context.run_id if context else "scripted"
    flags, text = _parse_directives(message, options)
    pause = float(flags["delay"])
    yield RunStarted(run_id)
    if flags["fail"] == "start":
        yield ScriptedFailure("scripted failure at the start of the run")
    if "call" in flags:
        name, args = flags["call"]
        if context is not None and context.client_tool(name) is not None:
            if options.reasoning:
                yield ReasoningDelta(f"The client offers a tool named {name}; I will call it.")
            yield ToolStarted(f"call_{run_id[:8]}_{name}", name, args)
            yield RunFinished(run_id, "", STOP_PENDING_TOOLS)
            return
        text = f"No client tool named {name!r} was offered."
        flags["deltas"] = 0
    state = context.state if context is not None else None
    for change in flags.get("state", ()):
        event = state_change(change)
        state = changed(state, event)
        yield event
    usage = Usage(message, history) if options.usage else None
    if "ask" in flags or "question" in flags:
        yield from _stream_reply(run_id, (yield from _ask(run_id, flags)), flags, pause, usage)
        return
    turn = 1 + sum(1 for m in history if m.role == "user")
    if options.reasoning:
        for piece in _words(f"The user wrote {_count_words(len(text.split()))}; this is turn {turn}."):
            yield ReasoningDelta(piece)
            if pause:
                yield pause
    if flags.get("hang"):
        yield "hang"
    if flags.get("draw"):
        from ..content import Part  # (only the turns that make an image load the model)

        call_id = f"call_{run_id[:8]}_draw"
        yield ToolStarted(call_id, "draw", {"what": "a dot"})
        yield ToolFinished(call_id, "draw", "drew dot.png", parts=(Part.media("image", "image/png", data=DOT_PNG,
                                                                               name="dot.png"),))
    reply = yield from _reply(run_id, text, history, turn, options, pause)
    received = describe_parts(context.content) if context is not None and context.content else ""
    if received:
        reply = f"Received: {received}. {reply}"
    if flags.get("image"):
        from ..content import Part
        from ..events import ReplyPart

        yield ReplyPart(Part.media("image", "image/png", data=DOT_PNG, name="dot.png"))
    if state:
        shown = encode_json_text(state)
        reply += f" State: {shown if len(shown) <= 200 else shown[:197] + '...'}"
    yield from _stream_reply(run_id, reply, flags, pause, usage)


def _ask(run_id: str, flags: dict[str, Any]) -> Generator[Step, Answer | None, str]:
    """The reply after asking what the directives say (a question step gets its answer sent back)."""
    if "ask" in flags:
        return (yield from _ask_approval(run_id, *flags["ask"]))
    answer = yield flags["question"]
    if answer is not None and answer.accepted:
        return f"You answered {json.dumps(answer.value, sort_keys=True)}"
    return f"No answer ({answer.outcome if answer is not None else 'nobody asked'})"


def _ask_approval(run_id: str, name: str, args: Any) -> Generator[Step, Answer | None, str]:
    call_id = f"call_{run_id[:8]}_{name}"
    yield ToolStarted(call_id, name, args)
    answer = yield Question.approval(call_id, name, args)
    if answer is not None and answer.allowed:
        yield ToolFinished(call_id, name, {"ran": name})
        return f"Approved ({answer.outcome}): ran {name}"
    outcome = answer.outcome if answer is not None else "no answer"
    yield ToolFinished(call_id, name, f"not run: {outcome}", is_error=True)
    return f"Not approved ({outcome}): did not run {name}"


def _reply(
    run_id: str, text: str, history: Sequence[Message], turn: int, options: ScriptedOptions, pause: float
) -> Generator[Step, None, str]:
    """The reply text, after the word_count tool call when the reply is built from the message."""
    last = history[-1] if history else None
    if last is not None and last.role == "tool":
        return f"The tool returned: {last.content}"
    if options.reply:
        return options.reply
    if not options.tool:
        return f"You said: {text}"
    count = len(text.split())
    call_id = f"call_{run_id[:8]}_wc"
    yield ToolStarted(call_id, "word_count", {"text": text})
    if pause:
        yield pause
    yield ToolFinished(call_id, "word_count", {"words": count})
    return f"You said: {text} ({_count_words(count)}, turn {turn})"


def _stream_reply(
    run_id: str, reply: str, flags: dict[str, Any], pause: float, usage: Usage | None = None
) -> Iterator[Step]:
    """The reply as text deltas (failing half-way when asked), then the terminal event."""
    pieces = _words(reply)
    if flags["deltas"]:
        pieces = [pieces[i % len(pieces)] for i in range(flags["deltas"])]
    half = len(pieces) // 2
    for index, piece in enumerate(pieces):
        if index == half:
            if flags["fail"] == "middle":
                yield ScriptedFailure("scripted failure in the middle of the reply")
            if flags.get("error"):
                yield RunFailed(run_id, "the scripted backend reports an error, as asked",
                                usage.of(index) if usage else ())
                return
        yield TextDelta(piece)
        if pause:
            yield pause
    yield RunFinished(run_id, "".join(pieces), usage=usage.of(len(pieces)) if usage else ())


class ScriptedAgent:
    """Sync agent: the kernel runs it on a worker thread."""

    def __init__(self, options: ScriptedOptions) -> None:
        self.options = options
        self.token = CancelToken()

    def cancel(self) -> None:
        self.token.cancel()

    def run(self, message: str, *, history: Sequence[Message] | None = None, context: RunContext | None = None) -> Iterator[Event]:
        token = context.cancel if context is not None else self.token
        steps = plan(message, history or (), context, self.options)
        answer: Answer | None = None
        while True:
            try:
                step = steps.send(answer)
            except StopIteration:
                return
            answer = None
            if isinstance(step, Question):
                answer = context.ask_sync(step) if context is not None else None
            elif isinstance(step, float):
                if token.wait(step):
                    return
            elif step == "hang":
                token.wait()
                return
            elif isinstance(step, BaseException):
                raise step
            else:
                yield step
            if token.cancelled:
                return


class AsyncScriptedAgent:
    """Async agent: the kernel runs it in a task and cancels the task to stop it."""

    def __init__(self, options: ScriptedOptions) -> None:
        self.options = options

    async def run(
        self, message: str, *, history: Sequence[Message] | None = None, context: RunContext | None = None
    ) -> AsyncIterator[Event]:
        steps = plan(message, history or (), context, self.options)
        answer: Answer | None = None
        while True:
            try:
                step = steps.send(answer)
            except StopIteration:
                return
            answer = None
            if isinstance(step, Question):
                answer = await context.ask(step) if context is not None else None
            elif isinstance(step, float):
                await asyncio.sleep(step)
            elif step == "hang":
                await asyncio.Event().wait()
            elif isinstance(step, BaseException):
                raise step
            else:
                yield step


def scripted(options: ScriptedOptions | None = None) -> ScriptedAgent | AsyncScriptedAgent:
    """Backend factory registered as ``scripted``: a fresh agent per run."""
    options = options or ScriptedOptions()
    if options.mode == "async":
        return AsyncScriptedAgent(options)
    return ScriptedAgent(options)


scripted.Options = ScriptedOptions  # type: ignore[attr-defined]
scripted.capabilities = frozenset({"client_tools"})  # type: ignore[attr-defined]


def _accepts(options: ScriptedOptions | None) -> frozenset[str]:
    text = options.accepts if options is not None else ALL_ACCEPTED
    return frozenset(k.strip() for k in text.split(",") if k.strip())


scripted.accepts = _accepts  # type: ignore[attr-defined]
