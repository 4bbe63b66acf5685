"""Typed request and response models (pydantic), shown in the OpenAPI docs."""

# No `from __future__ import annotations`: pydantic builds the field types when a model is made.
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from .content_models import PartOut, StateEventOut, UsageOut, content_type


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HistoryToolCall(_Strict):
    """A tool call an assistant message made in an earlier turn."""

    id: str
    name: str
    arguments: Any = None


HistoryContent = content_type(str, "its text, or its parts (text, images, files…)")


class HistoryMessage(_Strict):
    """One message of the conversation so far; the caller keeps the history."""

    role: Literal["system", "user", "assistant", "tool"]
    content: HistoryContent = ""  # type: ignore[valid-type]
    tool_calls: list[HistoryToolCall] = Field(default_factory=list)
    tool_call_id: Optional[str] = None

    def to_kernel(self) -> dict[str, Any]:
        content = self.content if isinstance(self.content, str) else [p.to_kernel() for p in self.content]
        out: dict[str, Any] = {"role": self.role, "content": content}
        if self.tool_calls:
            out["tool_calls"] = [c.model_dump() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


MESSAGE_HELP = (
    "what the user says now: text, or a list of parts (text, images, audio, video, documents, resources, links, "
    "JSON data; at most limits.max_parts, each checked by the server before the run)"
)
STATE_HELP = (
    "the shared state the client holds (a JSON object): the run starts from it, and the reply says how the agent "
    "changed it"
)


def message_type(max_message_chars: int, pattern: str | None = None) -> Any:
    """A message's type: text within the kernel's limit (the schema's maxLength), or parts."""
    text = Annotated[str, Field(min_length=1, max_length=max_message_chars, pattern=pattern)]
    return content_type(text, MESSAGE_HELP)


def chat_request_model(max_message_chars: int) -> type[BaseModel]:
    """The request body, with the kernel's message limit in its schema."""

    Message = message_type(max_message_chars)

    class ChatRequest(_Strict):
        """A message for the agent and, optionally, the conversation before it and the
        shared state the client holds."""

        message: Message  # type: ignore[valid-type]
        history: list[HistoryMessage] = Field(default_factory=list, description="earlier messages, oldest first")
        state: Optional[dict[str, Any]] = Field(default=None, description=STATE_HELP)

    return ChatRequest


class ToolCallRecord(BaseModel):
    """A tool call the agent made during the run, with its result."""

    call_id: str
    name: str
    arguments: Any = None
    result: Any = None
    is_error: bool = False
    parts: list[PartOut] = Field(default_factory=list, description="a result that is more than text (an image "
                                 "the tool made); empty otherwise")


# -- questions (human in the loop) ----------------------------------------------------
APPROVAL_OUTCOMES = ("allow_once", "allow_always", "reject_once", "reject_always")
INPUT_OUTCOMES = ("accept", "decline", "cancel")
Outcome = Literal["allow_once", "allow_always", "reject_once", "reject_always", "accept", "decline", "cancel"]
MAX_ANSWERS = 64


class QuestionTool(BaseModel):
    """The tool call an approval question is about."""

    id: str = Field(description="the tool call's id (the call_id of its tool_started event)")
    name: str
    arguments: Any = None


class QuestionOut(BaseModel):
    """A question the run needs a person to answer before it goes on.

    ``approval``: may the agent run ``tool``? Answer with an outcome among ``choices``
    (allow_once, allow_always, reject_once, reject_always; ``*_always`` holds for the rest
    of the run). ``input``: a free-form question; answer ``accept`` with a ``value``
    object that fits ``schema`` (a flat JSON Schema form), or ``decline`` / ``cancel``.
    """

    model_config = ConfigDict(populate_by_name=True)

    id: str = Field(description="the question's id: name it in the answer")
    run_id: str
    kind: Literal["approval", "input"]
    prompt: str = Field(description="what to show the person")
    tool: Optional[QuestionTool] = Field(default=None, description="approvals: the tool call to allow or reject")
    schema_: Optional[dict[str, Any]] = Field(
        default=None, alias="schema", description="input questions: a JSON Schema (flat object form) for the value"
    )
    choices: list[str] = Field(description="the outcomes an answer may give")
    expires_at: Optional[float] = Field(description="epoch seconds; after that the run ends cancelled")
    metadata: dict[str, Any] = Field(default_factory=dict)


class AnswerOut(BaseModel):
    """The answer a question got: from a person, a policy, or because it expired."""

    question_id: str
    outcome: str
    value: Any = None
    by: str = ""
    how: Literal["person", "policy", "expired", "cancelled"] = "person"


class AnswerIn(_Strict):
    """One answer: the question's id, an outcome among its choices, and for an accepted
    input question the value."""

    question_id: str = Field(min_length=1, max_length=200)
    outcome: Outcome
    value: Optional[dict[str, Any]] = Field(
        default=None, description="input questions answered accept: an object that fits the question's schema"
    )


class AnswersRequest(_Strict):
    """The answers to a suspended run's questions (one or more of them)."""

    answers: list[AnswerIn] = Field(min_length=1, max_length=MAX_ANSWERS)


class QuestionsResponse(BaseModel):
    """The questions a suspended run waits for."""

    run_id: str
    questions: list[QuestionOut]
    resume_url: str = Field(description="POST the answers here (or to <resume_url>/stream for events)")


class ChatResponse(BaseModel):
    """The agent's reply to one message (or to the answers of a suspended run).

    ``status`` is ``completed`` when the run ended, ``needs_input`` when it stopped to ask
    (``stop_reason`` ``suspended``): ``questions`` then lists what it asks, ``reply`` the
    text so far, and the run waits (until the questions' ``expires_at``) for a POST to
    ``resume_url``.
    """

    run_id: str
    reply: str = Field(description="the whole reply text (so far, when status is needs_input)")
    stop_reason: str = Field(description="end_turn, max_turns, suspended, …")
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    reasoning: str = Field(default="", description="the agent's reasoning, if the backend shares it")
    status: Literal["completed", "needs_input"] = Field(
        default="completed", description="needs_input: the run waits for answers to `questions`"
    )
    questions: Optional[list[QuestionOut]] = Field(
        default=None, description="needs_input: the questions to answer (absent otherwise)"
    )
    answers: Optional[list[AnswerOut]] = Field(
        default=None, description="answers questions got during this response (absent when none)"
    )
    resume_url: Optional[str] = Field(default=None, description="needs_input: where to POST the answers")
    thread_id: Optional[str] = Field(
        default=None, description="a turn on a thread: the thread it was kept in (absent for a stateless /chat)"
    )
    parts: Optional[list[PartOut]] = Field(
        default=None, description="when the reply holds more than text (an image the agent made): all of it as "
        "parts, in order, its text included (absent otherwise)"
    )
    usage: list[UsageOut] = Field(default_factory=list, description="what the run cost so far, per model")
    state: Optional[dict[str, Any]] = Field(
        default=None, description="the run's shared state at the end of this response (absent when the run has none)"
    )
    state_events: Optional[list[StateEventOut]] = Field(
        default=None, description="how the state came to be, in order: a snapshot, then the agent's JSON Patch "
        "deltas (absent when the run has no state)"
    )


class ErrorBody(BaseModel):
    """Every error: a short machine-readable code and a one-line message."""

    error: str
    detail: str
