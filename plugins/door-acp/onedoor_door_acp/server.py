"""The ACP agent the editor talks to: a thin protocol surface over the session manager.

``serve_acp`` runs one ACP connection over one channel. ``acp``'s router turns each
request into a call of the method of the same name on :class:`AcpServer` (a plain
class: methods it lacks answer -32601). Every request runs in its own task, so
``session/cancel`` arrives while ``session/prompt`` streams. A prompt is a slash command
(:mod:`.commands`) or a turn (:mod:`.turn`); the backend and model choices are in
:mod:`.backends` (the picker's shapes in :mod:`.models`), the error replies in :mod:`.errors`.
``session/set_model`` (the older, unstable model picker) is routed here too: ``acp``
has no route for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import onedoor
from onedoor import OnedoorError
from onedoor.threads.stores import data_dir
from onedoor.wire import jsonrpc

from . import commands
from . import models as picker
from .backends import Backends
from .bridge import REQUEST_ID, ChannelTransport, guarded
from .content import as_dict, plain_text
from .errors import error, invalid, not_found
from .sessions import DB_NAME, Session, SessionManager, SessionStore, UnknownSession
from .thread_sessions import ThreadSessions
from .translate import replay, text_chunk
from .turn import run_turn

log = logging.getLogger("onedoor.door.acp")
PROTOCOL_VERSION = 1


class AcpServer:
    """ACP agent methods (called by ``acp``'s router with the request's fields)."""

    def __init__(self, ctx: Any, options: Any, transport: ChannelTransport) -> None:
        self.ctx = ctx
        self.options = options
        self.transport = transport
        self.conn: Any = None
        self.backends = Backends(ctx, options)
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
        from acp.router import Route

        router = build_agent_router(self, use_unstable_protocol=True)  # type: ignore[arg-type]
        router.add_route(Route(method="session/set_model", func=self._set_model_request, kind="request"))
        hooks = self.ctx.kernel.hooks or getattr(self.ctx, "hooks", None)
        handler = guarded(router, hooks, getattr(self.ctx, "transport_name", "") or "")
        self.conn = Connection(handler, self.transport, listening=False)
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
            raise not_found(exc, session_id) from None

    @staticmethod
    def _check_cwd(cwd: str) -> None:
        if not os.path.isabs(cwd):
            raise invalid(f"cwd must be an absolute path, got {cwd!r}")

    # -- backends and models --------------------------------------------------------------
    @staticmethod
    def _idle(session: Session, what: str) -> None:
        if session.turn is not None:
            raise error(jsonrpc.INVALID_REQUEST, f"a prompt is running in this session; switch the {what} when it "
                                                 "has ended (or cancel it)")

    def _set_backend(self, session: Session, name: str) -> None:
        self._idle(session, "backend")
        self.backends.kernel_for(name)  # an invalid-params error if it cannot answer
        session.backend = name
        self.sessions.save(session)

    async def _set_model(self, session: Session, model_id: Any) -> None:
        self._idle(session, "model")
        await self.backends.check_model(session, model_id)  # an invalid-params error if it cannot answer
        self._idle(session, "model")  # a prompt may have started meanwhile
        session.settings = picker.with_choice(session.settings, session.backend, model_id)
        self.sessions.save(session)

    async def _config_changed(self, session: Session) -> None:
        await self.notify(session.id, {"sessionUpdate": "config_option_update",
                                       "configOptions": await self.backends.config_options(session)})

    async def switch_backend(self, session: Session, name: str) -> None:
        """``/backend NAME``: the session's backend, and the editor told of the new config options."""
        self._set_backend(session, name)
        await self._config_changed(session)

    async def switch_model(self, session: Session, model_id: str) -> None:
        """``/model ID`` and ``session/set_model``: the session's model, and the editor told of the new config options."""
        await self._set_model(session, model_id)
        await self._config_changed(session)

    async def _session_reply(self, session: Session, **fields: Any) -> dict[str, Any]:
        """A reply of session/new, load, resume or fork: ``fields``, the config options and, when
        the backend lists models, ``models``. A plain dict: ``acp``'s models have no ``models``
        field and drop a custom category."""
        reply = {**fields, "configOptions": await self.backends.config_options(session)}
        state = await self.backends.model_state(session)
        if state is not None:
            reply["models"] = state
        return reply

    async def _set_model_request(self, params: Any) -> Any:
        """``session/set_model`` ``{sessionId, modelId}`` -> ``{}``."""
        params = params if isinstance(params, dict) else {}
        session_id, model_id = params.get("sessionId"), params.get("modelId")
        if not isinstance(session_id, str) or not isinstance(model_id, str):
            raise invalid("session/set_model takes sessionId and modelId, both strings")
        await self.switch_model(await self._session(session_id), model_id)
        return {}

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
                prompt_capabilities=self._prompt_capabilities(PromptCapabilities),
                mcp_capabilities=McpCapabilities(http=False, sse=False),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(), fork=SessionForkCapabilities(),
                    resume=SessionResumeCapabilities(), close=SessionCloseCapabilities(),
                ),
            ),
            auth_methods=[],
            agent_info=Implementation(name="onedoor", title="onedoor", version=onedoor.__version__),
        )

    def _prompt_capabilities(self, make: Any) -> Any:
        """What prompts may hold besides text and links: what the backend takes. Embedded
        resources always (their text goes to any backend; a binary one only to a backend
        that takes resources, else -32602)."""
        accepts = self.ctx.kernel.backend.accepts
        return make(image="image" in accepts, audio="audio" in accepts, embedded_context=True)

    def can_read_files(self) -> bool:
        """Whether the client declared ``fs.readTextFile`` (then ``file://`` links are read through it)."""
        fs = getattr(self.client_capabilities, "fs", None)
        return bool(getattr(fs, "read_text_file", False))

    async def _set_mcp(self, session: Session, mcp_servers: Any) -> None:
        from .editor_mcp import EditorMcp

        if session.mcp is not None:
            await session.mcp.aclose()
        session.mcp = EditorMcp(mcp_servers) if mcp_servers else None

    async def _opened(self, session: Session, mcp_servers: Any) -> None:
        """A session was created, loaded, resumed or forked: its editor's MCP servers, then the follow-up."""
        await self._set_mcp(session, mcp_servers)
        self._after_open(session, mcp_servers)

    def _after_open(self, session: Session, mcp_servers: Any) -> None:
        """After the reply: advertise the slash commands; be honest about MCP servers."""
        names = [getattr(s, "name", "?") for s in (mcp_servers or ())]

        async def follow_up() -> None:
            await self.notify(session.id, {"sessionUpdate": "available_commands_update", "availableCommands": commands.COMMANDS})
            if names and not self.backends.uses_tools(session):
                await self.notify(session.id, text_chunk(
                    "agent_message_chunk",
                    f"Note: backend {session.backend!r} cannot use tools, so the editor's MCP servers "
                    f"({', '.join(names)}) are not connected and their tools are not available in this session.\n",
                ))

        self.transport.after_reply(follow_up)

    async def new_session(self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **_: Any) -> Any:
        self._check_cwd(cwd)
        try:
            session = await self.sessions.create(cwd, additional_directories)
        except OnedoorError as exc:  # the thread store refused (e.g. it is unreachable)
            raise error(jsonrpc.INTERNAL_ERROR, f"could not create a session: {exc}") from None
        await self._opened(session, mcp_servers)
        return await self._session_reply(session, sessionId=session.id)

    async def _open(self, session_id: str, cwd: str) -> Session:
        self._check_cwd(cwd)
        try:
            return await self.sessions.open(session_id, cwd)
        except UnknownSession as exc:
            raise not_found(exc, session_id) from None

    async def load_session(self, cwd: str, session_id: str, mcp_servers: Any = None, additional_directories: Any = None, **_: Any) -> Any:
        session = await self._open(session_id, cwd)
        try:
            history = await self.sessions.history(session)
        except UnknownSession as exc:  # deleted by another door since it was opened
            raise not_found(exc, session_id) from None
        for update in replay(history):
            await self.notify(session.id, update)
        await self._opened(session, mcp_servers)
        return await self._session_reply(session)

    async def resume_session(self, session_id: str, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **_: Any) -> Any:
        session = await self._open(session_id, cwd)
        await self._opened(session, mcp_servers)
        return await self._session_reply(session)

    async def fork_session(self, session_id: str, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **_: Any) -> Any:
        self._check_cwd(cwd)
        try:
            session = await self.sessions.fork(session_id, cwd)
        except UnknownSession as exc:
            raise not_found(exc, session_id) from None
        await self._opened(session, mcp_servers)
        return await self._session_reply(session, sessionId=session.id)

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
            raise invalid(str(exc)) from None
        infos = [
            SessionInfo(session_id=s.id, cwd=s.cwd, title=s.title or None, updated_at=s.updated_at,
                        additional_directories=s.additional_directories or None)
            for s in page
        ]
        return ListSessionsResponse(sessions=infos, next_cursor=next_cursor)

    async def set_config_option(self, config_id: str, session_id: str, value: Any, **_: Any) -> Any:
        session = await self._session(session_id)
        if config_id == "backend":
            if not isinstance(value, str):
                raise invalid("the backend option takes a backend name")
            self._set_backend(session, value)
        elif config_id == picker.MODEL_OPTION and await self.backends.models(session.backend):
            if not isinstance(value, str):
                raise invalid("the model option takes a model id")
            await self._set_model(session, value)
        else:
            have = ", ".join(o["id"] for o in await self.backends.config_options(session))
            raise invalid(f"unknown config option {str(config_id)[:100]!r}; this session has: {have}"
                          + (f" (backend {session.backend!r} offers no model choice)" if config_id == picker.MODEL_OPTION else ""))
        return {"configOptions": await self.backends.config_options(session)}

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
        blocks = [as_dict(block) for block in prompt]
        text = plain_text(blocks)
        previous = session.turn
        if previous is not None:
            if not previous.cancelled.is_set():
                raise error(jsonrpc.INVALID_REQUEST, "a prompt is already running in this session; cancel it first")
            await asyncio.wait_for(previous.done.wait(), self.ctx.kernel.limits.cancel_grace + 2)
        command = commands.parse(text) if text is not None else None
        if command is not None:
            reply = await commands.run(self, session, *command)
            await self.notify(session.id, text_chunk("agent_message_chunk", reply))
            return {"stopReason": "end_turn"}
        return await run_turn(self, session, blocks)


async def serve_acp(channel: Any, ctx: Any, options: Any) -> None:
    """Serve ACP on one channel until the peer goes away."""
    server = AcpServer(ctx, options, ChannelTransport(channel))
    await server.serve()
