"""What the executor keeps about one task while its kernel run lives: :class:`TaskLink`.

The kernel knows the run (running, parked, its questions); it cannot know where the
task's A2A events go nor what of them went out. A link holds that, and is dropped when
the task's final status is out:

- the task's ``TaskUpdater`` (the SDK's event queue of the task);
- the reply so far: text deltas go out as ``reply`` artifact updates with
  ``append: true`` after the first, and before the task asks or ends one last update
  with ``append: false`` (a replacement, as the protocol and both SDKs' task stores apply
  it) carries the whole text, so the stored task holds the reply as one text part
  (``lastChunk: true`` once the run has ended);
- whether the task's final status went out (``CancelTask`` and the run's own ending
  race, and an event after the final status is refused);
- for an input-required task: its question, when it expires, and the watcher that ends
  the task if the run ends without an answer (:mod:`.parked`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from a2a.helpers import new_text_part
from a2a.types import TaskState
from onedoor import Question

ARTIFACT_ID = "reply"


class TaskLink:
    def __init__(self, updater: Any, principal: str, thread_id: str | None) -> None:
        self.updater = updater
        self.principal = principal
        self.thread_id = thread_id  # the onedoor thread the task's context names, if the server keeps threads
        self.text: list[str] = []  # the reply so far (every response of the run)
        self.fresh = 0  # deltas sent since the last whole-text update
        self.closed = False  # the task's final status is out (or going out)
        self.question: Question | None = None  # while the task is input-required
        self.expires_at: float | None = None
        self.watcher: asyncio.Task[None] | None = None
        self.ended = asyncio.Event()  # set when the kernel says the run ended (the door's run hook)

    async def delta(self, text: str) -> None:
        if self.closed or not text:
            return
        await self.updater.add_artifact([new_text_part(text)], artifact_id=ARTIFACT_ID, name="reply",
                                        append=bool(self.text))
        self.text.append(text)
        self.fresh += 1

    async def whole_text(self, *, last: bool) -> None:
        """Replace the artifact's parts with the reply as one part (if there is a reply and
        anything changed, or it is the last word on it)."""
        if not self.text or not (self.fresh or last):
            return
        whole = "".join(self.text)
        self.text = [whole]
        self.fresh = 0
        await self.updater.add_artifact([new_text_part(whole)], artifact_id=ARTIFACT_ID, name="reply",
                                        append=False, last_chunk=last)

    async def ask(self, parts: list[Any]) -> None:
        """The task is input-required, the status message says what to answer."""
        if self.closed:
            return
        await self.whole_text(last=False)
        await self.updater.requires_input(self.updater.new_agent_message(parts))

    async def end(self, state: int, note: str = "") -> bool:
        """The task's final status (once: False if it went out already), the reply first."""
        if self.closed:
            return False
        self.closed = True
        self.stop_watching()
        await self.whole_text(last=True)
        message = self.updater.new_agent_message([new_text_part(note)]) if note else None
        if state == TaskState.TASK_STATE_COMPLETED:
            await self.updater.complete(message)
        elif state == TaskState.TASK_STATE_CANCELED:
            await self.updater.cancel(message)
        else:
            await self.updater.failed(message)
        return True

    def stop_watching(self) -> None:
        watcher, self.watcher = self.watcher, None
        if watcher is not None and watcher is not asyncio.current_task():
            watcher.cancel()
        self.question = None
        self.expires_at = None


__all__ = ["ARTIFACT_ID", "TaskLink"]
