"""Runs a client can come back to: the door streams through the kernel's journal.

Every run the door starts is handed to ``kernel.journals.start(stream, on_disconnect=...)``;
the POST response follows the journal (:class:`JournalRun`), and so may a second reader:

``GET /agui/runs/{runId}/events`` streams that AG-UI run again as SSE: every event from
its ``RUN_STARTED`` (a fresh translation with the same message ids as the first), then the
live ones, up to its ``RUN_FINISHED``/``RUN_ERROR``. Each frame group carries an SSE ``id:``
(a journal cursor); a reader that reconnects with ``Last-Event-ID`` (or ``?after=CURSOR``)
gets only what came after it. This is how the chat page, reloaded mid-reply, shows the
whole reply. A run whose client went away keeps running only when its ``on_disconnect``
is ``finish`` (door option, or the input's ``forwardedProps.onDisconnect: "finish"`` on a
stored thread, which the page sends); with ``cancel`` it stops, as before journals.

Errors: 404 ``not_found`` (unknown run, another principal's, or past the journal's
retention), 422 ``invalid_request`` (a cursor that is not one of this run's), 409
``cursor_expired`` (events after the cursor are no longer kept: read the thread).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from onedoor import CursorExpired, parse_cursor

LIVE_MEMORY = 4096  # AG-UI runs this door remembers for reattaching (the journal decides how long they last)


@dataclass
class LiveRun:
    """What reattaching to one AG-UI run needs: where it is in the kernel's journal and
    how its first translation was set up."""

    agui_run_id: str
    thread_id: str
    principal: str
    journal: Any  # the kernel's RunJournal
    after: int  # the journal's last number before this AG-UI run (a resumed run continues a journal)
    id_prefix: str  # message ids of its translation
    parent_run_id: str | None = None
    carried: dict[str, tuple[str, str]] = field(default_factory=dict)
    snapshot_base: list[dict[str, Any]] = field(default_factory=list)
    snapshot_ids: str | None = None


class LiveRuns:
    """The runs started here, by AG-UI run id (bounded), and the latest per thread."""

    def __init__(self) -> None:
        self.by_run: OrderedDict[str, LiveRun] = OrderedDict()
        self.by_thread: dict[tuple[str, str], str] = {}

    def add(self, live: LiveRun) -> None:
        self._forget_dropped()
        self.by_run[live.agui_run_id] = live
        self.by_run.move_to_end(live.agui_run_id)
        self.by_thread[(live.principal, live.thread_id)] = live.agui_run_id
        while len(self.by_run) > LIVE_MEMORY:
            _, old = self.by_run.popitem(last=False)
            if self.by_thread.get((old.principal, old.thread_id)) == old.agui_run_id:
                del self.by_thread[(old.principal, old.thread_id)]

    def _forget_dropped(self) -> None:
        """Let go of runs whose journal the kernel no longer keeps (each holds its thread's
        snapshot: kept past the journal, they would only hold memory)."""
        for run_id in [run_id for run_id, live in self.by_run.items() if getattr(live.journal, "dropped", False)]:
            old = self.by_run.pop(run_id)
            if self.by_thread.get((old.principal, old.thread_id)) == run_id:
                del self.by_thread[(old.principal, old.thread_id)]

    def get(self, agui_run_id: str, principal: str) -> LiveRun | None:
        live = self.by_run.get(agui_run_id)
        return live if live is not None and live.principal == principal else None

    def running_on(self, principal: str, thread_id: str) -> LiveRun | None:
        """The AG-UI run still going on a thread of ``principal`` (not one waiting for answers)."""
        run_id = self.by_thread.get((principal, thread_id))
        live = self.by_run.get(run_id) if run_id is not None else None
        if live is None or live.journal.done or not live.journal.running:
            return None
        return live


class JournalRun:
    """A journal's events as the run an :class:`~onedoor_transport_http.sse.EventStream`
    reads. ``cancel()`` (the client went away) cancels the run under ``on_disconnect =
    cancel``; under ``finish`` it only stops this reader and the run goes on."""

    def __init__(self, journal: Any, stream: Any, after: int, finish: bool) -> None:
        self.journal = journal
        self.stream = stream  # the kernel's RunStream
        self.after = after
        self.finish = finish
        self.run_id = journal.run_id
        self.seq = after  # the number of the event being encoded
        self._task: Any = None

    @property
    def suspended(self) -> bool:
        return bool(getattr(self.stream, "suspended", False))

    @property
    def outcome(self) -> Any:
        return getattr(self.stream, "outcome", None)

    async def __aenter__(self) -> "JournalRun":
        import asyncio

        self._task = asyncio.current_task()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        return None

    async def __aiter__(self) -> Any:
        async for seq, event in self.journal.follow(after=self.after):
            self.seq = seq
            yield event

    def cancel(self) -> None:
        if not self.finish:
            self.journal.cancel()
        elif self._task is not None and not self._task.done():
            self._task.cancel()  # stop reading; the run goes on into its thread


def with_id(frames: bytes, cursor: str) -> bytes:
    """SSE frames of one core event with the ``id:`` on the last frame (a reader that
    reconnects with it has seen every frame of that event)."""
    if not frames:
        return frames
    at = frames.rfind(b"\n\ndata: ", 0, len(frames) - 2)
    at = 0 if at < 0 else at + 2
    return frames[:at] + b"id: " + cursor.encode("ascii") + b"\n" + frames[at:]


def start_after(live: LiveRun, raw_cursor: str | None) -> int:
    """The journal number a reattaching reader has seen (ValueError for a foreign cursor)."""
    if not raw_cursor:
        return live.after
    cursor = parse_cursor(raw_cursor)
    if cursor.run_id != live.journal.run_id:
        raise ValueError("the cursor belongs to another run")
    if cursor.seq > live.journal.last_seq:
        raise ValueError("the cursor is ahead of this run's events")
    return max(cursor.seq, live.after)


__all__ = ["CursorExpired", "JournalRun", "LiveRun", "LiveRuns", "start_after", "with_id"]
