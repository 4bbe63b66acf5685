"""One prompt turn of one session (:class:`Turn`) and running it (:func:`run_turn`).

A turn holds its run, its cancel state, the tool calls it announced or rejected and the
questions it asks the editor (:mod:`.approvals`). Running it streams the run's events as
``session/update`` notifications, in order, checkpoints the turn while it runs (so a
crash loses at most a moment of it) and ends with the prompt's stop reason, or an error
reply when the backend or a ``fail`` policy ended it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from onedoor import (
    STOP_CANCELLED,
    STOP_MAX_TURNS,
    LiveAsker,
    OnedoorError,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    RunRefused,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from onedoor.events import ReplyPart
from onedoor.messages import Message
from onedoor.questions import APPROVAL, Answer, Question, closing_answer
from onedoor.wire import jsonrpc

from .approvals import REJECTED, TurnCancelled, ask_approval, ask_input
from .bridge import REQUEST_ID, REQUEST_META
from .content import part_block, plain_text, prompt_parts
from .errors import error, invalid, not_found, refused
from .sessions import Session, UnknownSession
from .translate import TurnRecorder, part_chunk, text_chunk, tool_end, tool_start, tool_status
from .usage import prompt_reply, session_cost, usage_update

log = logging.getLogger("onedoor.door.acp")
CHECKPOINT_SECONDS = 0.5  # a running turn's progress is saved this often (crash safety)
STOP_REASONS = {STOP_MAX_TURNS: "max_turn_requests", STOP_CANCELLED: "cancelled"}


class Turn:
    """One prompt turn of one session: its run, cancel state, tool-call states and the
    questions it asks the editor (:mod:`.approvals`). ``door`` is the connection's
    :class:`~.server.AcpServer`."""

    def __init__(self, door: Any, session: Session) -> None:
        self.door = door
        self.session = session
        self.run: Any = None
        self.cancelled = asyncio.Event()
        self.done = asyncio.Event()
        self.recorder = TurnRecorder()
        self.announced: set[str] = set()
        self.rejected: set[str] = set()
        self.requests: set[asyncio.Future] = set()  # requests to the editor waiting for a reply
        self.asks: set[asyncio.Future] = set()  # questions being asked (done when each ends)
        self.failure: str | None = None  # set by ask_fallback "fail": the prompt ends with an error
        self.base: list[dict[str, Any]] = []  # the door-kept history before the run (no thread store)
        self.base_count = 0  # the thread's length before the run (thread store)
        self.pending: dict[str, Any] = {}  # the turn's checkpoint (thread store)
        self.usage: Any = ()  # the run's usage, once it has ended

    def cancel(self) -> None:
        self.cancelled.set()
        self.drop_requests()
        if self.run is not None:
            self.run.cancel()

    def drop_requests(self) -> None:
        """End the questions still open (the turn was cancelled, or its run has ended)."""
        for request in list(self.requests):
            request.cancel()

    def fail(self, reason: str) -> None:
        """End the turn with a JSON-RPC error (the run itself is cancelled)."""
        if self.failure is None:
            self.failure = reason
        self.cancel()

    def release(self) -> None:
        """The turn ends without streaming: its session takes the next prompt."""
        self.session.turn = None
        self.done.set()

    async def notify(self, update: dict[str, Any]) -> None:
        await self.door.notify(self.session.id, update)

    async def ask(self, question: Question) -> Answer:
        """The turn's live asker (see :mod:`.approvals`). Ends when the editor answers, or
        at once when the turn is cancelled (the call is closed in the editor either way),
        even if the kernel has stopped waiting for it."""
        if self.cancelled.is_set():
            return closing_answer(question, "cancelled")
        asking = asyncio.get_running_loop().create_future()
        self.asks.add(asking)
        try:
            if question.kind == APPROVAL and question.tool is not None:
                return await ask_approval(self, question)
            return await ask_input(self, question)
        except Exception:
            log.warning("acp: asking the editor failed", exc_info=log.isEnabledFor(logging.DEBUG))
            return closing_answer(question, "policy")
        finally:
            self.asks.discard(asking)
            asking.set_result(None)

    async def settle(self) -> None:
        """Wait for open questions to close (they end on cancel), so the editor gets every
        call closed before the prompt's reply."""
        if self.asks:
            await asyncio.wait(set(self.asks), timeout=self.door.ctx.kernel.limits.cancel_grace + 1)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request to the editor: its result, or its error raised; TurnCancelled
        once the turn is cancelled (which drops the open request)."""
        if self.cancelled.is_set():
            raise TurnCancelled()
        request = asyncio.ensure_future(self.door.conn.send_request(method, params))
        self.requests.add(request)
        try:
            return await request
        except asyncio.CancelledError:  # the turn, or the run (the kernel stops asking), was cancelled
            request.cancel()
            raise TurnCancelled() from None  # the asker closes the call and answers no
        finally:
            self.requests.discard(request)

    async def reject(self, call_id: str, name: str, arguments: Any, reason: str = REJECTED) -> None:
        self.rejected.add(call_id)
        self.recorder.add_rejected(call_id, name, arguments, reason)
        try:
            await self.notify(tool_end(call_id, reason, True))
        except ConnectionError:  # the editor has gone; the history still records the rejection
            pass


async def _editor_tools(door: Any, session: Session, kernel: Any) -> list[Any]:
    """The editor's MCP tools, for a backend that can use them (connects on first use)."""
    if session.mcp is None or "tools" not in kernel.backend.capabilities:
        return []
    tools = await session.mcp.tools()
    for note in session.mcp.take_notes():
        await door.notify(session.id, text_chunk("agent_message_chunk", f"Note: {note}.\n"))
    return tools


async def _message(turn: Turn, blocks: list[dict[str, Any]], kernel: Any) -> str | list[dict[str, Any]]:
    """The run's message: the prompt's text, or its parts (``file://`` links read through
    the editor, when it offers ``fs.readTextFile``, as requests of this turn: a cancel ends them)."""
    text = plain_text(blocks)
    if text is not None:
        return text
    door, session = turn.door, turn.session

    async def read(params: dict[str, Any]) -> Any:
        from acp import RequestError

        try:
            return await turn.request("fs/read_text_file", {"sessionId": session.id, **params})
        except RequestError as exc:
            raise invalid(f"the editor could not read {params['path']}: {exc}") from None

    return await prompt_parts(blocks, read=read if door.can_read_files() else None,
                              roots=[session.cwd, *session.additional_directories],
                              max_bytes=kernel.limits.max_part_bytes)


def user_message(message: str | list[dict[str, Any]], run: Any) -> dict[str, Any]:
    """The prompt as a history message: its text and parts as the kernel checked them for
    ``run`` (not decoded a second time)."""
    if isinstance(message, str):
        return {"role": "user", "content": message}
    return Message("user", run.message, parts=run.parts).to_dict()


async def run_turn(door: Any, session: Session, blocks: list[dict[str, Any]]) -> Any:
    """Run the prompt ``blocks`` as a turn of ``session`` on the connection ``door``; the prompt's reply."""
    turn = Turn(door, session)
    session.turn = turn  # from here a second prompt (or a model switch) is refused and a cancel applies
    if REQUEST_ID.get() in door.cancelled_requests:
        turn.cancel()
    try:
        kernel = await door.backends.kernel_of(session)  # its backend, on the model it picked
        message = await _message(turn, blocks, kernel)
        tools = await _editor_tools(door, session, kernel)
        where = await door.sessions.prepare_turn(session, turn)  # the history, or the thread
        run = kernel.run(message, **where, tools=tools, door="acp", asker=LiveAsker(turn.ask), meta=REQUEST_META.get())
    except TurnCancelled:  # cancelled while the editor was reading a file
        turn.release()
        return prompt_reply("cancelled", ())
    except UnknownSession as exc:  # its thread was deleted by another door
        turn.release()
        raise not_found(exc, session.id) from None
    except RunRefused as exc:
        turn.release()
        raise refused(exc) from None
    except BaseException:
        turn.release()
        raise
    turn.run = run
    try:
        await door.sessions.begin_turn(session, turn, user_message(message, run))  # kept even if the process dies
    except BaseException:
        await run.aclose()
        turn.release()
        raise
    checkpoints = asyncio.ensure_future(_checkpoints(door, session, turn))
    outcome: Any = None
    try:
        outcome = await _stream(turn, run)
    except ConnectionError:
        turn.cancel()
    finally:
        checkpoints.cancel()
        turn.drop_requests()  # a question the run no longer waits for (it ended) gets no answer
        await turn.settle()
        note = "" if outcome is None or type(outcome) is RunFinished else f"\n[the run failed: {outcome.error}]"
        if turn.failure is not None:
            note = f"\n[the run failed: {turn.failure}]"
        session.turn = None
        turn.usage = outcome.usage if outcome is not None else ()
        try:
            await door.sessions.end_turn(session, turn, note)
        except Exception:
            log.exception("could not save session %s", session.id)
        turn.done.set()
    if turn.failure is not None:
        raise error(jsonrpc.INTERNAL_ERROR, f"the run failed: {turn.failure}", {"runId": run.run_id})
    await _report_usage(door, session, turn.usage)
    if turn.cancelled.is_set() or outcome is None:
        return prompt_reply("cancelled", turn.usage)
    if type(outcome) is RunFailed:
        raise error(jsonrpc.INTERNAL_ERROR, f"the backend failed: {outcome.error}", {"runId": outcome.run_id})
    return prompt_reply(STOP_REASONS.get(outcome.stop_reason, "end_turn"), turn.usage)


async def _report_usage(door: Any, session: Session, usage: Any) -> None:
    """``usage_update`` after a turn that reported usage, when the context window's size is known."""
    size = door.options.context_window
    if not usage or size <= 0:
        return
    cost = None
    if any(u.cost is not None for u in usage):
        try:
            cost = session_cost(await door.sessions.history(session))
        except (UnknownSession, OnedoorError):  # the thread went meanwhile: the update goes without the cost
            cost = None
    try:
        await door.notify(session.id, usage_update(usage, size, cost))
    except ConnectionError:
        pass


async def _checkpoints(door: Any, session: Session, turn: Turn) -> None:
    """Save the turn's progress while it runs, so a crash loses at most a moment of it."""
    saved = TurnRecorder().mark()  # the turn starts empty (it may have progressed before this task runs)
    while True:
        await asyncio.sleep(CHECKPOINT_SECONDS)
        mark = turn.recorder.mark()
        if mark != saved:
            saved = mark
            door.sessions.checkpoint(session, turn)


async def _stream(turn: Turn, run: Any) -> Any:
    """Send the run's events as session updates, in order; return the terminal event."""
    send = turn.door.conn.send_notification
    sid = turn.session.id
    recorder = turn.recorder
    text_parts = recorder.text
    thought_parts = recorder.reasoning
    outcome = None
    async with run:
        if turn.cancelled.is_set():
            run.cancel()
        async for event in run:
            kind = type(event)
            if kind is TextDelta:
                text_parts.append(event.text)
                await send("session/update", {"sessionId": sid, "update": {
                    "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": event.text}}})
            elif kind is ReasoningDelta:
                thought_parts.append(event.text)
                await send("session/update", {"sessionId": sid, "update": {
                    "sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": event.text}}})
            elif kind is ToolStarted:
                if event.call_id not in turn.rejected:
                    recorder.add(event)
                    if event.call_id not in turn.announced:
                        turn.announced.add(event.call_id)
                        await turn.notify(tool_start(event.call_id, event.name, event.arguments))
                    await turn.notify(tool_status(event.call_id, "in_progress"))
            elif kind is ReplyPart:
                recorder.add(event)
                await send("session/update", {"sessionId": sid, "update": part_chunk("agent_message_chunk", event.part)})
            elif kind is ToolFinished:
                if event.call_id not in turn.rejected:
                    recorder.add(event)
                    blocks = [part_block(p) for p in event.parts]
                    await turn.notify(tool_end(event.call_id, event.result, event.is_error, blocks))
            elif kind is RunFinished or kind is RunFailed:
                outcome = event
            # QuestionAsked/Answered: the turn's asker carries questions (request_permission,
            # elicitation/create). StateSnapshot/StateDelta: ACP has no place for shared state (the
            # kernel keeps it with the thread). UsageReported: the terminal event has the sum.
    return outcome


__all__ = ["CHECKPOINT_SECONDS", "STOP_REASONS", "Turn", "run_turn"]
