"""A RunAgentInput (its JSON) -> the kernel's prompt, history and client tools, or
(with ``resume``) the answers to a parked run's interrupts.

The last user message is the prompt and every message before it is history. When the
client answers frontend tool calls, its messages end with the tool results after the
last user message: that is a continuation, all messages become history and the prompt
is empty (:data:`CONTINUE_PROMPT`), which the kernel accepts only after tool results. Reasoning and activity messages are the client's view of
earlier runs and are left out; developer messages become system messages.

User and tool messages may hold content parts (images, audio, video, documents:
:mod:`.content`); each such message is checked by the ``check`` a caller passes (the
kernel's limits and what its backend takes) and kept as parts. The input's ``context``
goes to the backend in ``extras["context"]`` (a list of ``{"description", "value"}``);
``forwardedProps.onedoor`` carries this door's own settings (``stateVersion``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from onedoor import ContentError, Message, Part, RunRefused, ToolCall, ToolSpec, WireError, decode_json, parse_content

from .content import PartError, from_agui, modernize

CONTINUE_PROMPT = ""  # a continuation: the kernel takes an empty message after tool results
MAX_RESUME_ENTRIES = 64  # one resume answers the interrupts of one run; more is not a real client
PAST_ROLES = ("assistant", "reasoning", "activity")  # what marks the end of what a thread already has
KNOWN_ROLES = ("user", "assistant", "tool", "system", "developer", "reasoning", "activity")


NO_USER_MESSAGE = "the messages contain no user message: nothing to answer"

Check = Callable[[list[dict[str, Any]]], tuple[str, tuple[Part, ...]]]
"""Checks a message's parts (onedoor part dicts): its text and parts, or RunRefused."""


def default_check(parts: list[dict[str, Any]]) -> tuple[str, tuple[Part, ...]]:
    """Parts checked without a kernel's limits (what a caller without one gets)."""
    try:
        return parse_content(parts)
    except ContentError as exc:
        reason = {"too_large": "too_large", "unsupported": "unsupported_content"}.get(exc.reason, "invalid")
        raise RunRefused(reason, str(exc)) from None


class InputError(ValueError):
    """The input is well-formed JSON but not a usable RunAgentInput."""


@dataclass
class RunRequest:
    thread_id: str
    run_id: str
    prompt: str  # the prompt's text (with parts: their text, as text_of writes it)
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
    parts: tuple[Part, ...] = ()  # the prompt's parts, when it is more than text
    state_version: int | None = None  # forwardedProps.onedoor.stateVersion: the state's version the client holds
    held_users: int = 0  # user messages of the input before the prompt (what the client holds of a thread)

    @property
    def wants_snapshot(self) -> bool:
        props = self.forwarded_props
        return isinstance(props, dict) and bool(props.get("messagesSnapshot"))

    @property
    def refuses_snapshot(self) -> bool:
        """``forwardedProps.messagesSnapshot: false``: no MESSAGES_SNAPSHOT at all (the client holds the thread)."""
        props = self.forwarded_props
        return isinstance(props, dict) and props.get("messagesSnapshot") is False

    @property
    def message(self) -> str | tuple[Part, ...]:
        """What ``kernel.run`` takes as the message: the parts, or the text."""
        return self.parts or self.prompt


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


def _content(content: Any, check: Check) -> tuple[str, tuple[Part, ...]]:
    """A message's text and parts (parts empty: text only)."""
    try:
        value = from_agui(content)
    except PartError as exc:
        raise InputError(str(exc)) from None
    if isinstance(value, str):
        return value, ()
    return check(value)


def _arguments(raw: str) -> Any:
    """A tool call's arguments (JSON text from the client) as a value; kept as text when
    they are not JSON under onedoor.wire (too deep, huge numbers…)."""
    try:
        return decode_json(raw) if raw else {}
    except WireError:
        return raw


def to_core(message: Any, check: Check = default_check) -> Message | None:
    """One validated AG-UI message -> a core Message (None: not part of the history)."""
    role = message.role
    if role == "user":
        text, parts = _content(message.content, check)
        return Message("user", text, parts=parts)
    if role == "assistant":
        calls = tuple(ToolCall(c.id, c.function.name, _arguments(c.function.arguments)) for c in message.tool_calls or ())
        return Message("assistant", message.content or "", calls)
    if role == "tool":
        content, parts = _content(message.content, check)
        if not content and message.error:
            content = message.error
        return Message("tool", content, tool_call_id=message.tool_call_id, parts=parts)
    if role in ("system", "developer"):
        return Message("system", message.content)
    return None  # reasoning, activity


def build_request(data: dict[str, Any], check: Check = default_check) -> RunRequest:
    """Validate a RunAgentInput (JSON object) and build the kernel's inputs; ``check`` checks
    each message's parts (RunRefused from it passes through).

    Raises :class:`InputError` with a one-line reason.
    """
    from ag_ui.core import RunAgentInput
    from pydantic import ValidationError

    precheck(data)
    try:
        modernize(data)
        parsed = RunAgentInput.model_validate(data)
    except PartError as exc:
        raise InputError(str(exc)) from None
    except ValidationError as exc:
        raise InputError(_describe(exc)) from None
    messages = list(parsed.messages)
    found = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if found is None and not (messages and messages[-1].role == "tool"):
        raise InputError(NO_USER_MESSAGE)
    last_user = -1 if found is None else found  # none: tool results alone, continuing a stored thread
    tail = messages[last_user + 1 :]
    continuation = bool(tail) and tail[-1].role == "tool"
    core = [to_core(m, check) for m in messages]  # each message converted (and its parts checked) once
    prompt, parts = CONTINUE_PROMPT, tuple[Part, ...]()
    if not continuation:
        last = core[last_user]
        assert last is not None
        prompt, parts = last.content, last.parts
        if not prompt.strip() and not parts:
            raise InputError("the last user message has no text and no parts")
    history = [m for m in (core if continuation else core[:last_user]) if m is not None]
    boundary = 1 + max((i for i, m in enumerate(messages) if m.role in PAST_ROLES), default=-1)
    new_end = len(messages) if continuation else last_user
    new = [m for m in core[boundary:new_end] if m is not None and m.role in ("user", "tool")]
    return RunRequest(
        thread_id=parsed.thread_id,
        run_id=parsed.run_id,
        prompt=prompt,
        history=history,
        tools=_tools(parsed.tools),
        messages=[m.model_dump(by_alias=True, mode="json") for m in messages],
        forwarded_props=parsed.forwarded_props,
        state=parsed.state,
        extras={
            "thread_id": parsed.thread_id,
            "forwarded_props": parsed.forwarded_props,
            "context": [{"description": c.description, "value": c.value} for c in parsed.context or ()],
        },
        new=new,
        new_messages=[m.model_dump(by_alias=True, mode="json") for m in messages[boundary:]],
        nothing_new=not continuation and last_user < boundary,
        has_user=found is not None,
        parts=parts,
        state_version=_state_version(parsed.forwarded_props),
        held_users=sum(1 for m in messages[: max(last_user, 0)] if m.role == "user"),
    )


def _tools(tools: Any) -> list[ToolSpec]:
    seen: set[str] = set()
    out = []
    for tool in tools or ():
        if tool.name in seen:
            raise InputError(f"tool {tool.name!r} is listed twice")
        seen.add(tool.name)
        params = tool.parameters if isinstance(tool.parameters, dict) else {"type": "object"}
        out.append(ToolSpec(tool.name, tool.description, params, client=True))
    return out


def _state_version(props: Any) -> int | None:
    """``forwardedProps.onedoor.stateVersion``: the version of the thread's state the client's
    ``state`` is based on (None: not sent)."""
    ours = props.get("onedoor") if isinstance(props, dict) else None
    if ours is None:
        return None
    if not isinstance(ours, dict):
        raise InputError("forwardedProps.onedoor must be an object")
    version = ours.get("stateVersion")
    if version is None:
        return None
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise InputError("forwardedProps.onedoor.stateVersion must be a whole number (the version of the state sent)")
    return version


def build_resume(data: dict[str, Any]) -> ResumeRequest:
    """Validate a resuming RunAgentInput; :class:`InputError` with a one-line reason."""
    from ag_ui.core import RunAgentInput
    from pydantic import ValidationError

    precheck(data)
    resume = data.get("resume")
    if isinstance(resume, list) and len(resume) > MAX_RESUME_ENTRIES:
        raise InputError(f"'resume' has {len(resume)} entries; at most {MAX_RESUME_ENTRIES} are taken")
    try:
        modernize(data)
        parsed = RunAgentInput.model_validate(data)
    except PartError as exc:
        raise InputError(str(exc)) from None
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
