"""The ACP agent the editor talks to: a thin protocol surface over the session manager.

``serve_acp`` runs one ACP connection over one channel. ``acp``'s router turns each
request into a call of the method of the same name on :class:`AcpServer` (a plain
class: methods it lacks answer -32601). Every request runs in its own task, so
``session/cancel`` arrives while ``session/prompt`` streams.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import onedoor
from onedoor import (
    STOP_CANCELLED,
    STOP_MAX_TURNS,
    LiveAsker,
    OnedoorError,
    QuestionAnswered,
    QuestionAsked,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    RunRefused,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from onedoor.questions import APPROVAL, Answer, Question, closing_answer
from onedoor.threads.stores import data_dir
from onedoor.wire import jsonrpc

from . import commands
from .approvals import REJECTED, TurnCancelled, ask_approval, ask_input
from .bridge import REQUEST_ID, ChannelTransport, guarded
from .sessions import DB_NAME, Session, SessionManager, SessionStore, UnknownSession
from .thread_sessions import ThreadSessions
from .translate import (
    TurnRecorder,
    UnsupportedContent,
    prompt_text,
    replay,
    text_chunk,
    tool_end,
    tool_start,
    tool_status,
)

log = logging.getLogger("onedoor.door.acp")
PROTOCOL_VERSION = 1
CHECKPOINT_SECONDS = 0.5  # a running turn's progress is saved this often (crash safety)
STOP_REASONS = {STOP_MAX_TURNS: "max_turn_requests", STOP_CANCELLED: "cancelled"}
RESOURCE_NOT_FOUND = -32002  # ACP's code for a session id that names no session


def _error(code: int, detail: str, data: Any = None, *, title: str | None = None) -> Exception:
    """An ACP error reply: "<title>: <detail>", the title being the JSON-RPC code's unless given."""
    from acp import RequestError

    message = f"{title}: {detail}" if title else jsonrpc.error_object(code, detail)["message"]
    return RequestError(code, message, data)


def _not_found(exc: Exception, session_id: str) -> Exception:
    return _error(RESOURCE_NOT_FOUND, str(exc), {"sessionId": session_id}, title="Resource not found")


def _invalid(message: str) -> Exception:
    return _error(jsonrpc.INVALID_PARAMS, message)


class Turn:
    """One prompt turn of one session: its run, cancel state, tool-call states and the
    questions it asks the editor (:mod:`.approvals`)."""

    def __init__(self, door: "AcpServer", session: Session) -> None:
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


class AcpServer:
    """ACP agent methods (called by ``acp``'s router with the request's fields)."""

    def __init__(self, ctx: Any, options: Any, transport: ChannelTransport) -> None:
        self.ctx = ctx
        self.options = options
        self.transport = transport
        self.conn: Any = None
        self.kernels = {ctx.kernel.backend.name: ctx.kernel}
        legacy = SessionStore(data_dir(options.data_dir) / DB_NAME)
        self.sessions: SessionManager | ThreadSessions
        if ctx.kernel.store is None:  # --store none: the door keeps sessions in its own file
            self.sessions = SessionManager(legacy, ctx.kernel.backend.name)
        else:
            self.sessions = ThreadSessions(ctx.kernel.store, legacy, ctx.kernel.backend.name, view=ctx.kernel.threads.view)
        self.client_capabilities: Any = None
        self.prompt_requests: dict[Any, Session] = {}  # JSON-RPC id of a running prompt -> session
        self.cancelled_requests: dict[Any, None] = {}  # ids named by $/cancel_request (bounded)
        transport.on_cancel_request = self._cancel_request

    # -- plumbing ------------------------------------------------------------------------
    async def serve(self) -> None:
        from acp.agent.router import build_agent_router
        from acp.connection import Connection

        router = build_agent_router(self, use_unstable_protocol=True)  # type: ignore[arg-type]
        self.conn = Connection(guarded(router), self.transport, listening=False)
        try:
            await self.sessions.start()
            await self.conn.main_loop()
        except Exception:  # noqa: BLE001 - logged by acp; still clean up
            pass
        finally:
            await self.shutdown()

    async def shutdown(self) -> None:
        """The editor went away: cancel every running turn, wait briefly, close."""
        turns = [s.turn for s in self.sessions.running()]
        for turn in turns:
            turn.cancel()
        if turns:
            waits = [asyncio.ensure_future(t.done.wait()) for t in turns]
            await asyncio.wait(waits, timeout=self.ctx.kernel.limits.cancel_grace + 1)
            for w in waits:
                w.cancel()
        for session in list(self.sessions.live.values()):
            if session.mcp is not None:
                await self._set_mcp(session, None)
        await self.conn.close()
        self.sessions.close_files()

    async def notify(self, session_id: str, update: dict[str, Any]) -> None:
        await self.conn.send_notification("session/update", {"sessionId": session_id, "update": update})

    async def _session(self, session_id: str) -> Session:
        try:
            return await self.sessions.get(session_id)
        except UnknownSession as exc:
            raise _not_found(exc, session_id) from None

    @staticmethod
    def _check_cwd(cwd: str) -> None:
        if not os.path.isabs(cwd):
            raise _invalid(f"cwd must be an absolute path, got {cwd!r}")

    # -- backends ------------------------------------------------------------------------
    def backend_choices(self) -> list[str]:
        if self.options.backends:
            names = [n.strip() for n in self.options.backends.split(",") if n.strip()]
        else:
            from onedoor import plugins

            names = plugins.names("backend")
        default = self.ctx.kernel.backend.name
        return [default] + [n for n in names if n != default]

    def kernel_for(self, name: str) -> Any:
        kernel = self.kernels.get(name)
        if kernel is None:
            from onedoor import Kernel, plugins

            if name not in self.backend_choices():
                raise _invalid(f"unknown backend {name!r}; choose one of {', '.join(self.backend_choices())}")
            try:
                backend, _ = plugins.make_backend(name)
            except OnedoorError as exc:
                raise _invalid(f"backend {name!r} cannot be used: {exc}") from None
            base = self.ctx.kernel
            kernel = self.kernels[name] = Kernel(backend, limits=base.limits, hooks=base.hooks, store=base.store)
        return kernel

    def config_options(self, session: Session) -> list[Any]:  # plain dicts; the response models validate them
        choices = self.backend_choices()
        if session.backend not in choices:
            choices.append(session.backend)
        return [{
            "id": "backend", "name": "Backend", "category": "model", "type": "select",
            "description": "which onedoor backend answers in this session",
            "currentValue": session.backend,
            "options": [{"value": n, "name": n} for n in choices],
        }]

    async def switch_backend(self, session: Session, name: str) -> None:
        self.kernel_for(name)
        session.backend = name
        self.sessions.save(session)
        await self.notify(session.id, {"sessionUpdate": "config_option_update", "configOptions": self.config_options(session)})

    # -- ACP methods ---------------------------------------------------------------------
    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **_: Any) -> Any:
        from acp.schema import (
            AgentCapabilities,
            Implementation,
            InitializeResponse,
            McpCapabilities,
            PromptCapabilities,
            SessionCapabilities,
            SessionCloseCapabilities,
            SessionForkCapabilities,
            SessionListCapabilities,
            SessionResumeCapabilities,
        )

        self.client_capabilities = client_capabilities
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,  # the only version this door speaks; the client decides
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=False, sse=False),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(), fork=SessionForkCapabilities(),
                    resume=SessionResumeCapabilities(), close=SessionCloseCapabilities(),
                ),
            ),
            auth_methods=[],
            agent_info=Implementation(name="onedoor", title="onedoor", version=onedoor.__version__),
        )

    def _uses_tools(self, session: Session) -> bool:
        return "tools" in self.kernel_for(session.backend).backend.capabilities

    async def _set_mcp(self, session: Session, mcp_servers: Any) -> None:
        from .editor_mcp import EditorMcp

        if session.mcp is not None:
            await session.mcp.aclose()
        session.mcp = EditorMcp(mcp_servers) if mcp_servers else None

    def _after_open(self, session: Session, mcp_servers: Any) -> None:
        """After the reply: advertise the slash commands; be honest about MCP servers."""
        names = [getattr(s, "name", "?") for s in (mcp_servers or ())]

        async def follow_up() -> None:
            await self.notify(session.id, {"sessionUpdate": "available_commands_update", "availableCommands": commands.COMMANDS})
            if names and not self._uses_tools(session):
                await self.notify(session.id, text_chunk(
                    "agent_message_chunk",
                    f"Note: backend {session.backend!r} cannot use tools, so the editor's MCP servers "
                    f"({', '.join(names)}) are not connected and their tools are not available in this session.\n",
                ))

        self.transport.after_reply(follow_up)

    async def _editor_tools(self, session: Session, kernel: Any) -> list[Any]:
        """The editor's MCP tools, for a backend that can use them (connects on first use)."""
        if session.mcp is None or "tools" not in kernel.backend.capabilities:
            return []
        tools = await session.mcp.tools()
        for note in session.mcp.take_notes():
            await self.notify(session.id, text_chunk("agent_message_chunk", f"Note: {note}.\n"))
        return tools

    async def new_session(self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **_: Any) -> Any:
        from acp.schema import NewSessionResponse

        self._check_cwd(cwd)
        try:
            session = await self.sessions.create(cwd, additional_directories)
        except OnedoorError as exc:  # the thread store refused (e.g. it is unreachable)
            raise _error(jsonrpc.INTERNAL_ERROR, f"could not create a session: {exc}") from None
        await self._set_mcp(session, mcp_servers)
        self._after_open(session, mcp_servers)
        return NewSessionResponse(session_id=session.id, config_options=self.config_options(session))

    async def _open(self, session_id: str, cwd: str) -> Session:
        self._check_cwd(cwd)
        try:
            return await self.sessions.open(session_id, cwd)
        except UnknownSession as exc:
            raise _not_found(exc, session_id) from None

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, additional_directories: Any = None, **_: Any) -> Any:
        from acp.schema import LoadSessionResponse

        session = await self._open(session_id, cwd)
        try:
            history = await self.sessions.history(session)
        except UnknownSession as exc:  # deleted by another door since it was opened
            raise _not_found(exc, session_id) from None
        for update in replay(history):
            await self.notify(session.id, update)
        await self._set_mcp(session, mcp_servers)
        self._after_open(session, mcp_servers)
        return LoadSessionResponse(config_options=self.config_options(session))

    async def resume_session(self, session_id: str, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **_: Any) -> Any:
        from acp.schema import ResumeSessionResponse

        session = await self._open(session_id, cwd)
        await self._set_mcp(session, mcp_servers)
        self._after_open(session, mcp_servers)
        return ResumeSessionResponse(config_options=self.config_options(session))

    async def fork_session(self, session_id: str, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **_: Any) -> Any:
        from acp.schema import ForkSessionResponse

        self._check_cwd(cwd)
        try:
            session = await self.sessions.fork(session_id, cwd)
        except UnknownSession as exc:
            raise _not_found(exc, session_id) from None
        await self._set_mcp(session, mcp_servers)
        self._after_open(session, mcp_servers)
        return ForkSessionResponse(session_id=session.id, config_options=self.config_options(session))

    async def close_session(self, session_id: str, **_: Any) -> Any:
        session = await self._session(session_id)
        if session.turn is not None:
            session.turn.cancel()
        await self.sessions.close(session_id)
        await self._set_mcp(session, None)
        return {}

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **_: Any) -> Any:
        from acp.schema import ListSessionsResponse, SessionInfo

        try:
            page, next_cursor = await self.sessions.page(cwd, cursor)
        except ValueError as exc:
            raise _invalid(str(exc)) from None
        infos = [
            SessionInfo(session_id=s.id, cwd=s.cwd, title=s.title or None, updated_at=s.updated_at,
                        additional_directories=s.additional_directories or None)
            for s in page
        ]
        return ListSessionsResponse(sessions=infos, next_cursor=next_cursor)

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **_: Any) -> Any:
        session = await self._session(session_id)
        if config_id != "backend":
            raise _invalid(f"unknown config option {config_id!r}; this agent has: backend")
        if not isinstance(value, str):
            raise _invalid("the backend option takes a backend name")
        self.kernel_for(value)
        session.backend = value
        self.sessions.save(session)
        return {"configOptions": self.config_options(session)}

    async def cancel(self, session_id: str, **_: Any) -> None:
        session = self.sessions.live.get(session_id)
        if session is None:
            log.warning("session/cancel for unknown session %r ignored", session_id)
            return
        if session.turn is not None:
            session.turn.cancel()

    def _cancel_request(self, request_id: Any) -> None:
        """``$/cancel_request`` for a running prompt cancels its turn, like session/cancel."""
        self.cancelled_requests[request_id] = None  # it may arrive before its prompt starts
        while len(self.cancelled_requests) > 1000:
            del self.cancelled_requests[next(iter(self.cancelled_requests))]
        session = self.prompt_requests.get(request_id)
        if session is not None and session.turn is not None:
            session.turn.cancel()

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> Any:
        session = await self._session(session_id)
        request_id = REQUEST_ID.get()
        self.prompt_requests[request_id] = session
        try:
            return await self._prompt(session, prompt)
        finally:
            self.prompt_requests.pop(request_id, None)
            self.cancelled_requests.pop(request_id, None)

    async def _prompt(self, session: Session, prompt: list[Any]) -> Any:
        try:
            text = prompt_text(prompt)
        except UnsupportedContent as exc:
            raise _invalid(str(exc)) from None
        previous = session.turn
        if previous is not None:
            if not previous.cancelled.is_set():
                raise _error(jsonrpc.INVALID_REQUEST, "a prompt is already running in this session; cancel it first")
            await asyncio.wait_for(previous.done.wait(), self.ctx.kernel.limits.cancel_grace + 2)
        command = commands.parse(text)
        if command is not None:
            reply = await commands.run(self, session, *command)
            await self.notify(session.id, text_chunk("agent_message_chunk", reply))
            return {"stopReason": "end_turn"}
        return await self._run_turn(session, text)

    async def _run_turn(self, session: Session, text: str) -> Any:
        kernel = self.kernel_for(session.backend)
        turn = Turn(self, session)
        session.turn = turn  # from here a second prompt is refused and a cancel applies
        if REQUEST_ID.get() in self.cancelled_requests:
            turn.cancel()
        try:
            tools = await self._editor_tools(session, kernel)
            where = await self.sessions.prepare_turn(session, turn)  # the history, or the thread
            run = kernel.run(text, **where, tools=tools, door="acp", asker=LiveAsker(turn.ask))
        except UnknownSession as exc:  # its thread was deleted by another door
            session.turn = None
            turn.done.set()
            raise _not_found(exc, session.id) from None
        except RunRefused as exc:
            session.turn = None
            turn.done.set()
            data = {"reason": exc.reason, "retryAfter": exc.retry_after}
            if exc.reason == "busy":
                raise _error(jsonrpc.INTERNAL_ERROR, str(exc), data, title="Busy") from None
            raise _error(jsonrpc.INVALID_PARAMS, str(exc), data) from None
        except BaseException:
            session.turn = None
            turn.done.set()
            raise
        turn.run = run
        try:
            await self.sessions.begin_turn(session, turn, text)  # the prompt is kept even if the process dies
        except BaseException:
            await run.aclose()
            session.turn = None
            turn.done.set()
            raise
        checkpoints = asyncio.ensure_future(self._checkpoints(session, turn))
        outcome: Any = None
        try:
            outcome = await self._stream(turn, run)
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
            try:
                await self.sessions.end_turn(session, turn, note)
            except Exception:
                log.exception("could not save session %s", session.id)
            turn.done.set()
        if turn.failure is not None:
            raise _error(jsonrpc.INTERNAL_ERROR, f"the run failed: {turn.failure}", {"runId": run.run_id})
        if turn.cancelled.is_set() or outcome is None:
            return {"stopReason": "cancelled"}
        if type(outcome) is RunFailed:
            raise _error(jsonrpc.INTERNAL_ERROR, f"the backend failed: {outcome.error}", {"runId": outcome.run_id})
        return {"stopReason": STOP_REASONS.get(outcome.stop_reason, "end_turn")}

    async def _checkpoints(self, session: Session, turn: Turn) -> None:
        """Save the turn's progress while it runs, so a crash loses at most a moment of it."""
        saved: tuple[int, ...] = (0, 0, 0, 0)  # the turn starts empty
        while True:
            await asyncio.sleep(CHECKPOINT_SECONDS)
            mark = turn.recorder.mark()
            if mark != saved:
                saved = mark
                self.sessions.checkpoint(session, turn)

    async def _stream(self, turn: Turn, run: Any) -> Any:
        """Send the run's events as session updates, in order; return the terminal event."""
        send = self.conn.send_notification
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
                elif kind is ToolFinished:
                    if event.call_id not in turn.rejected:
                        recorder.add(event)
                        await turn.notify(tool_end(event.call_id, event.result, event.is_error))
                elif kind is RunFinished or kind is RunFailed:
                    outcome = event
                elif kind is QuestionAsked or kind is QuestionAnswered:
                    pass  # the turn's asker carries questions (request_permission, elicitation/create)
        return outcome


async def serve_acp(channel: Any, ctx: Any, options: Any) -> None:
    """Serve ACP on one channel until the peer goes away."""
    server = AcpServer(ctx, options, ChannelTransport(channel))
    await server.serve()
