"""What the executor keeps about one task while its kernel run lives: :class:`TaskLink`.

The kernel knows the run (running, parked, its questions); it cannot know where the
task's A2A events go nor what of them went out. A link holds that, and is dropped when
the task's final status is out:

- the task's ``TaskUpdater`` (the SDK's event queue of the task), and the media types its
  parts may be (the card's output modes within the client's ``acceptedOutputModes``);
- the reply so far: text deltas and reply parts (files, data) go out as ``reply``
  artifact updates with ``append: true`` after the first, and before the task asks or
  ends one last update with ``append: false`` (a replacement, as the protocol and both
  SDKs' task stores apply it) carries the whole reply, its text as one text part between
  the other parts, so the stored task holds it so (``lastChunk: true`` once the run has
  ended);
- a tool result that is more than text: a ``tool-<call id>`` artifact with its parts;
- the shared state: the ``state`` artifact, one data part (metadata ``onedoor: state``)
  holding the whole state, replaced whenever the run changes it;
- whether the task's final status went out (``CancelTask`` and the run's own ending
  race, and an event after the final status is refused); the final status update's
  metadata carries the run's ``usage`` (per model), and the thread's ``state_version``,
  which the SDK merges into the task's metadata;
- for an input-required task: its question, when it expires, and the watcher that ends
  the task if the run ends without an answer (:mod:`.parked`).
"""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

from a2a.helpers import new_data_part, new_text_part
from a2a.types import TaskState
from onedoor import Part, Question

from .content import STATE, TEXT_MODES, part_out

ARTIFACT_ID = "reply"
STATE_ARTIFACT = "state"


class TaskLink:
    def __init__(self, updater: Any, principal: str, thread_id: str | None, sends: Sequence[str] = TEXT_MODES) -> None:
        self.updater = updater
        self.principal = principal
        self.thread_id = thread_id  # the onedoor thread the task's context names, if the server keeps threads
        self.sends = list(sends)  # media types (and patterns) the task's parts may be
        self.reply: list[Any] = []  # the reply so far (every response of the run): text pieces and A2A parts
        self.fresh = 0  # pieces sent since the last whole-reply update
        self.state: Any = None  # the state as last sent (None: none sent)
        self.closed = False  # the task's final status is out (or going out)
        self.question: Question | None = None  # while the task is input-required
        self.expires_at: float | None = None
        self.watcher: asyncio.Task[None] | None = None
        self.ended = asyncio.Event()  # set when the kernel says the run ended (the door's run hook)

    async def delta(self, text: str) -> None:
        if self.closed or not text:
            return
        await self._add([new_text_part(text)], text)

    async def part(self, part: Part) -> None:
        """A part of the reply that is not text, in its place in the reply."""
        if self.closed:
            return
        out = part_out(part, self.sends)
        await self._add([out], out.text if out.WhichOneof("content") == "text" else out)

    async def _add(self, parts: list[Any], kept: Any) -> None:
        await self.updater.add_artifact(parts, artifact_id=ARTIFACT_ID, name="reply", append=bool(self.reply))
        self.reply.append(kept)
        self.fresh += 1

    async def whole_reply(self, *, last: bool) -> None:
        """Replace the artifact's parts with the reply, its text runs as one part each (if
        there is a reply and anything changed, or it is the last word on it)."""
        if not self.reply or not (self.fresh or last):
            return
        merged: list[Any] = []
        for piece in self.reply:
            if isinstance(piece, str) and merged and isinstance(merged[-1], str):
                merged[-1] += piece
            else:
                merged.append(piece)
        self.reply = merged
        self.fresh = 0
        parts = [new_text_part(piece) if isinstance(piece, str) else piece for piece in merged]
        await self.updater.add_artifact(parts, artifact_id=ARTIFACT_ID, name="reply", append=False, last_chunk=last)

    async def replay(self) -> None:
        """The reply and the state so far, each as one replacement (a follower that caught up
        silently: :mod:`.elsewhere`)."""
        if self.reply:
            self.fresh = max(self.fresh, 1)
            await self.whole_reply(last=False)
        state, self.state = self.state, None
        if state is not None:
            await self.state_now(state)

    def carry_on(self, task: Any) -> None:
        """Go on from the reply and the state as the stored ``task`` holds them (a run another
        server holds, answered through this one: its continuation adds to them)."""
        from a2a.helpers import get_data_parts

        for artifact in task.artifacts:
            if artifact.artifact_id == ARTIFACT_ID:
                self.reply = [p.text if p.WhichOneof("content") == "text" else p for p in artifact.parts]
            elif artifact.artifact_id == STATE_ARTIFACT:
                found = get_data_parts(list(artifact.parts))
                self.state = found[0] if found else None

    async def tool_result(self, call_id: str, name: str, parts: Sequence[Part]) -> None:
        """A tool result's parts (an image a tool made): an artifact of their own."""
        if self.closed or not parts:
            return
        await self.updater.add_artifact(
            [part_out(p, self.sends) for p in parts], artifact_id=f"tool-{call_id}", name=name,
            metadata={"onedoor": "tool_result", "call_id": call_id, "name": name}, append=False, last_chunk=True,
        )

    async def state_now(self, state: Any) -> None:
        """The run's shared state changed (or is shown at its start): the ``state`` artifact."""
        if self.closed or state is None or state == self.state:
            return
        part = new_data_part(state)
        part.metadata.update({"onedoor": STATE})
        await self.updater.add_artifact([part], artifact_id=STATE_ARTIFACT, name="state",
                                        metadata={"onedoor": STATE}, append=False)
        self.state = state

    async def ask(self, parts: list[Any], metadata: dict[str, Any] | None = None) -> None:
        """The task is input-required, the status message says what to answer."""
        if self.closed:
            return
        await self.whole_reply(last=False)
        await self.updater.update_status(TaskState.TASK_STATE_INPUT_REQUIRED, self.updater.new_agent_message(parts),
                                         metadata=metadata or None)

    async def end(self, state: int, note: str = "", metadata: dict[str, Any] | None = None) -> bool:
        """The task's final status (once: False if it went out already), the reply first;
        ``metadata`` (usage, the state's version) goes with it."""
        if self.closed:
            return False
        self.closed = True
        self.stop_watching()
        await self.whole_reply(last=True)
        message = self.updater.new_agent_message([new_text_part(note)]) if note else None
        await self.updater.update_status(state, message, metadata=metadata or None)
        return True

    def stop_watching(self) -> None:
        watcher, self.watcher = self.watcher, None
        if watcher is not None and watcher is not asyncio.current_task():
            watcher.cancel()
        self.question = None
        self.expires_at = None


__all__ = ["ARTIFACT_ID", "STATE_ARTIFACT", "TaskLink"]
