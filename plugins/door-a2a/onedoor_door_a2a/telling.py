"""Kernel events into an A2A task (:class:`~.links.TaskLink`): :func:`tell` for the events
between a run's start and its ending, :func:`usage_metadata` for the ending's metadata.
The executor feeds it a run's events here and, for a run answered through this server
while another server holds it, the continuation read from the run's shared journal; a
follower of a task another server runs (:mod:`.elsewhere`) feeds it too."""

from __future__ import annotations

from typing import Any

from a2a.helpers import new_data_part, new_text_part
from a2a.types import TaskState
from onedoor import (
    QuestionAnswered,
    ReasoningDelta,
    ReplyPart,
    RunFailed,
    RunFinished,
    StateDelta,
    StateSnapshot,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from onedoor.state import apply_patch
from onedoor.usage import usage_to_json

from .links import TaskLink


async def tell(link: TaskLink, event: Any, state_now: Any) -> None:
    """A kernel event (but the endings and questions) into the task: reply text and parts,
    the state (``state_now``: the run's current state, should a delta not apply), and
    ``working`` status updates a client can show for reasoning, tool calls and answers (a
    tool result's parts as an artifact too)."""
    kind = type(event)
    if kind is TextDelta:
        await link.delta(event.text)
        return
    if kind is ReplyPart:
        await link.part(event.part)
        return
    if kind is StateSnapshot or kind is StateDelta:
        await link.state_now(_state_after(link.state, event, state_now))
        return
    if link.closed:
        return
    if kind is ReasoningDelta:
        parts = [new_text_part(event.text)]
        meta = {"onedoor": "reasoning"}
    elif kind is ToolStarted:
        parts = [new_text_part(f"calling {event.name}"),
                 new_data_part({"call_id": event.call_id, "name": event.name, "arguments": event.arguments})]
        meta = {"onedoor": "tool_started"}
    elif kind is ToolFinished:
        parts = [new_text_part(f"{event.name} {'failed' if event.is_error else 'finished'}"),
                 new_data_part({"call_id": event.call_id, "name": event.name, "result": event.result,
                                "is_error": event.is_error})]
        meta = {"onedoor": "tool_finished"}
        await link.tool_result(event.call_id, event.name, event.parts)
    elif kind is QuestionAnswered:
        parts = [new_data_part({"answer": event.answer.to_dict()})]
        meta = {"onedoor": "question_answered"}
    else:
        return  # RunStarted
    updater = link.updater
    await updater.update_status(TaskState.TASK_STATE_WORKING, updater.new_agent_message(parts, metadata=meta))


def _state_after(state: Any, event: StateSnapshot | StateDelta, state_now: Any) -> Any:
    """The state once ``event`` is applied to ``state`` (the kernel applied it already: it
    applies; ``state_now`` if it does not, e.g. a response joined mid-way)."""
    if isinstance(event, StateSnapshot):
        return event.state
    try:
        return apply_patch(state if state is not None else {}, list(event.ops))
    except ValueError:
        return state_now


def usage_metadata(event: RunFinished | RunFailed) -> dict[str, Any]:
    """``{"usage": [...]}``: the run's usage per model (the kernel's JSON), when it has any."""
    return {"usage": usage_to_json(event.usage)} if event.usage else {}


__all__ = ["tell", "usage_metadata"]
