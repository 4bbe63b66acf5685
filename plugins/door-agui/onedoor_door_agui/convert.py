"""A RunAgentInput (its JSON) -> the kernel's prompt, history and client tools, or
(with ``resume``) the answers to a parked run's interrupts.

The last user message is the prompt and every message before it is history. When the
client answers frontend tool calls, its messages end with the tool results after the
last user message: that is a continuation, all messages become history and the prompt
is empty (:data:`CONTINUE_PROMPT`), which the kernel accepts only after tool results. Reasoning and activity messages are the client's view of
earlier runs and are left out; developer messages become system messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from onedoor import Message, ToolCall, ToolSpec, WireError, decode_json

CONTINUE_PROMPT = ""  # a continuation: the kernel takes an empty message after tool results
MAX_RESUME_ENTRIES = 64  # one resume answers the interrupts of one run; more is not a real client
PAST_ROLES = ("assistant", "reasoning", "activity")  # what marks the end of what a thread already has
KNOWN_ROLES = ("user", "assistant", "tool", "system", "developer", "reasoning", "activity")


NO_USER_MESSAGE = "the messages contain no user message: nothing to answer"


class InputError(ValueError):
    """The input is well-formed JSON but not a usable RunAgentInput."""


@dataclass
class RunRequest:
    thread_id: str
    run_id: str
    prompt: str
    history: list[Message]
    tools: list[ToolSpec]
    messages: list[dict[str, Any]]  # the input's messages, as sent (for MESSAGES_SNAPSHOT)
    forwarded_props: Any = None
    state: Any = None
    extras: dict[str, Any] = field(default_factory=dict)
    new: list[Message] = field(default_factory=list)  # new user/tool messages before the prompt (threads)
    new_messages: list[dict[str, Any]] = field(default_factory=list)  # the new part, as sent (snapshots)
    nothing_new: bool = False  # the input ends with an assistant message: nothing to add to a thread
    has_user: bool = True  # False: only tool results, which continue a stored thread (refused without one)

    @property
    def wants_snapshot(self) -> bool:
        props = self.forwarded_props
        return isinstance(props, dict) and bool(props.get("messagesSnapshot"))


@dataclass
class ResumeRequest:
    """A RunAgentInput whose ``resume`` answers interrupts: the run that continues is the
    parked one, so messages, tools and state are not run again (messages only feed a
    MESSAGES_SNAPSHOT)."""

    thread_id: str
    run_id: str
    entries: list[tuple[str, str, Any]]  # (interruptId, status, payload), in order
    messages: list[dict[str, Any]]
    forwarded_props: Any = None

    @property
    def wants_snapshot(self) -> bool:
        props = self.forwarded_props
        return isinstance(props, dict) and bool(props.get("messagesSnapshot"))


def is_resume(data: Any) -> bool:
    """A RunAgentInput that carries resume entries (an empty list answers nothing: a plain run)."""
    return isinstance(data, dict) and data.get("resume") not in (None, [])


def precheck(data: Any) -> None:
    """Clear messages for the mistakes pydantic would word poorly."""
    if not isinstance(data, dict):
        raise InputError("the body must be a JSON object (a RunAgentInput)")
    for key in ("threadId", "runId", "messages"):
        if key not in data and _snake(key) not in data:
            raise InputError(f"RunAgentInput needs {key!r}")
    messages = data.get("messages")
    if not isinstance(messages, list):
        raise InputError("'messages' must be a list")
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InputError(f"messages[{index}] must be an object")
        role = message.get("role")
        if role not in KNOWN_ROLES:
            raise InputError(f"messages[{index}] has unknown role {role!r}; expected one of {', '.join(KNOWN_ROLES)}")


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def _text(content: Any) -> str:
    """Text of a message's content: a string, or the text parts of a list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        text = getattr(part, "text", None)
        if isinstance(text, str) and getattr(part, "type", "text") == "text":
            parts.append(text)
    return "\n".join(parts)


def _arguments(raw: str) -> Any:
    """A tool call's arguments (JSON text from the client) as a value; kept as text when
    they are not JSON under onedoor.wire (too deep, huge numbers…)."""
    try:
        return decode_json(raw) if raw else {}
    except WireError:
        return raw


def to_core(message: Any) -> Message | None:
    """One validated AG-UI message -> a core Message (None: not part of the history)."""
    role = message.role
    if role == "user":
        return Message("user", _text(message.content))
    if role == "assistant":
        calls = tuple(ToolCall(c.id, c.function.name, _arguments(c.function.arguments)) for c in message.tool_calls or ())
        return Message("assistant", message.content or "", calls)
    if role == "tool":
        content = _text(message.content)
        if not content and message.error:
            content = message.error
        return Message("tool", content, tool_call_id=message.tool_call_id)
    if role in ("system", "developer"):
        return Message("system", message.content)
    return None  # reasoning, activity


def build_request(data: dict[str, Any]) -> RunRequest:
    """Validate a RunAgentInput (JSON object) and build the kernel's inputs.

    Raises :class:`InputError` with a one-line reason.
    """
    from ag_ui.core import RunAgentInput
    from pydantic import ValidationError

    precheck(data)
    try:
        parsed = RunAgentInput.model_validate(data)
    except ValidationError as exc:
        raise InputError(_describe(exc)) from None
    messages = list(parsed.messages)
    found = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if found is None and not (messages and messages[-1].role == "tool"):
        raise InputError(NO_USER_MESSAGE)
    last_user = -1 if found is None else found  # none: tool results alone, continuing a stored thread
    tail = messages[last_user + 1 :]
    continuation = bool(tail) and tail[-1].role == "tool"
    if continuation:
        history_source, prompt = messages, CONTINUE_PROMPT
    else:
        history_source, prompt = messages[:last_user], _text(messages[last_user].content)
        if not prompt.strip():
            raise InputError("the last user message has no text")
    history = [m for m in (to_core(x) for x in history_source) if m is not None]
    boundary = 1 + max((i for i, m in enumerate(messages) if m.role in PAST_ROLES), default=-1)
    new_end = len(messages) if continuation else last_user
    new = [m for m in (to_core(x) for x in messages[boundary:new_end] if x.role in ("user", "tool")) if m is not None]
    seen: set[str] = set()
    tools = []
    for tool in parsed.tools or ():
        if tool.name in seen:
            raise InputError(f"tool {tool.name!r} is listed twice")
        seen.add(tool.name)
        params = tool.parameters if isinstance(tool.parameters, dict) else {"type": "object"}
        tools.append(ToolSpec(tool.name, tool.description, params, client=True))
    return RunRequest(
        thread_id=parsed.thread_id,
        run_id=parsed.run_id,
        prompt=prompt,
        history=history,
        tools=tools,
        messages=[m.model_dump(by_alias=True, mode="json") for m in messages],
        forwarded_props=parsed.forwarded_props,
        state=parsed.state,
        extras={"thread_id": parsed.thread_id, "state": parsed.state, "forwarded_props": parsed.forwarded_props},
        new=new,
        new_messages=[m.model_dump(by_alias=True, mode="json") for m in messages[boundary:]],
        nothing_new=not continuation and last_user < boundary,
        has_user=found is not None,
    )


def build_resume(data: dict[str, Any]) -> ResumeRequest:
    """Validate a resuming RunAgentInput; :class:`InputError` with a one-line reason."""
    from ag_ui.core import RunAgentInput
    from pydantic import ValidationError

    precheck(data)
    resume = data.get("resume")
    if isinstance(resume, list) and len(resume) > MAX_RESUME_ENTRIES:
        raise InputError(f"'resume' has {len(resume)} entries; at most {MAX_RESUME_ENTRIES} are taken")
    try:
        parsed = RunAgentInput.model_validate(data)
    except ValidationError as exc:
        raise InputError(_describe(exc)) from None
    entries: list[tuple[str, str, Any]] = [(e.interrupt_id, e.status, e.payload) for e in parsed.resume or ()]
    if not entries:
        raise InputError("'resume' names no interrupt")
    return ResumeRequest(
        thread_id=parsed.thread_id,
        run_id=parsed.run_id,
        entries=entries,
        messages=[m.model_dump(by_alias=True, mode="json") for m in parsed.messages],
        forwarded_props=parsed.forwarded_props,
    )


def _describe(exc: Any) -> str:
    errors = exc.errors()
    shown = []
    for err in errors[:3]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "body"
        shown.append(f"{where}: {err.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return "invalid RunAgentInput: " + "; ".join(shown) + more
