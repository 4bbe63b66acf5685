"""The door's ASGI app: the a2a-sdk request handler behind its route factories.

:func:`request_handler` is the one place the SDK's ``RequestHandler`` is built (the
executor, the task store, the card); an RPC-style transport (A2A over SLIM with
slima2a's servicer) reuses it as it is. :func:`build_app` puts it behind the JSON-RPC
and HTTP+JSON routes, with the card, for the HTTP transport.

Who is calling: :class:`PrincipalContextBuilder` names the onedoor principal (from the
transport's token check) as the SDK's user. The task store keeps tasks per user, so
another principal's task id is "task not found", and the executor runs as that
principal (threads, parked runs).

A new task's run starts before the SDK makes the task (:mod:`.admission`): a kernel
refusal is an A2A error on JSON-RPC and the HTTP transport's refusal on the HTTP+JSON
binding (:mod:`.refusals`), and no task is made.

In front of the routes: every request is told to the request observers (:mod:`.observed`),
and a 0.3 file part whose bytes are not base64 is answered -32602 (:mod:`.v03`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from a2a.auth.user import User
from a2a.server.routes.common import DefaultServerCallContextBuilder

from . import CARD_PATH, A2aOptions
from .card import agent_card, card_endpoint
from .refusals import NOTED, RestRefusals

if TYPE_CHECKING:
    from onedoor import ServeContext


class Principal(User):
    """An onedoor principal as the SDK's user (its ``user_name`` scopes the task store)."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self.name


class PrincipalContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, with the principal the transport's guard authenticated."""

    def build(self, request: Any) -> Any:
        context = super().build(request)
        noted = request.scope.get(NOTED)
        if noted is not None:  # an HTTP+JSON request: where a refusal is noted (refusals.RestRefusals)
            context.state[NOTED] = noted
        return context

    def build_user(self, request: Any) -> User:
        from onedoor import ServeContext

        return Principal(ServeContext.principal_of(request.scope))


def check_message(params: Any) -> None:
    """InvalidParamsError (-32602) for a message the agent cannot take, before a task exists
    (the SDK would otherwise fail inside the executor: a 500-like error and a logged traceback)."""
    from a2a.types import Role
    from a2a.utils.errors import InvalidParamsError

    message = params.message if params.HasField("message") else None
    if message is None or message.role != Role.ROLE_USER:
        raise InvalidParamsError(message="send a message with role ROLE_USER")
    if not message.message_id:
        raise InvalidParamsError(message="the message needs a messageId")
    if not message.parts:
        raise InvalidParamsError(message="the message has no parts")
    if any(part.HasField("text") and not part.text for part in message.parts):
        raise InvalidParamsError(message="a text part of the message is empty")


def checked_handler_class() -> type:
    """The SDK's default handler with :func:`check_message` in front of both send methods;
    a run started for a task the SDK then fails to make is freed (its kernel slot)."""
    from a2a.server.request_handlers import DefaultRequestHandler

    class CheckedRequestHandler(DefaultRequestHandler):  # type: ignore[misc, valid-type]
        async def on_message_send(self, params: Any, context: Any) -> Any:
            check_message(params)
            try:
                return await super().on_message_send(params, context)
            except BaseException:  # (GeneratorExit and cancellation too: a run execute never took)
                await _release(self, params)
                raise

        async def on_message_send_stream(self, params: Any, context: Any) -> Any:
            check_message(params)
            try:
                async for event in super().on_message_send_stream(params, context):
                    yield event
            except BaseException:  # (GeneratorExit and cancellation too: a run execute never took)
                await _release(self, params)
                raise

    return CheckedRequestHandler


async def _release(handler: Any, params: Any) -> None:
    """Free the run started for the task of ``params`` (the SDK wrote the task id it chose
    into the message), if its execute never took it."""
    await handler.agent_executor.release(params.message.task_id)


def request_handler(
    ctx: ServeContext, options: A2aOptions | None = None, *, door_name: str = "a2a", executors: list[Any] | None = None
) -> Any:
    """The a2a-sdk request handler for this server: tasks run through ``ctx.kernel``. Its
    executor is appended to ``executors`` (the door tells them when runs end).

    An input-required task's SDK state (its ``ActiveTask``) is kept until the task ends:
    its run's expiry ends it (:mod:`.parked`), so a2a-sdk 1.3's
    ``interrupted_task_timeout`` is not used (it would close the queue the ending goes to).
    """
    from a2a.server.tasks import InMemoryTaskStore

    from .admission import AdmittingContextBuilder
    from .executor import KernelExecutor

    options = options or A2aOptions()
    executor = KernelExecutor(
        ctx.kernel, door=door_name, ttl=options.question_ttl or None, fallback=options.ask_fallback
    )
    if executors is not None:
        executors.append(executor)
    origin = ctx.endpoint.base_url if ctx.endpoint is not None else "http://127.0.0.1:0"
    store = InMemoryTaskStore()
    return checked_handler_class()(
        agent_executor=executor, task_store=store, agent_card=agent_card(ctx, options, origin),
        request_context_builder=AdmittingContextBuilder(executor, store),
    )


def build_app(
    ctx: ServeContext, options: A2aOptions, *, door_name: str = "a2a", executors: list[Any] | None = None
) -> tuple[Any, Any]:
    """(the ASGI app to mount under the prefix, the card endpoint for the server root)."""
    from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
    from starlette.applications import Starlette
    from starlette.routing import Route

    from . import quiet_logs
    from .observed import ObservedRequests

    quiet_logs.install()
    handler = request_handler(ctx, options, door_name=door_name, executors=executors)
    builder = PrincipalContextBuilder()
    card = card_endpoint(ctx, options)
    routes: list[Any] = [Route(CARD_PATH, card, methods=["GET"])]
    routes += create_jsonrpc_routes(handler, rpc_url="/", context_builder=builder, enable_v0_3_compat=options.v03_compat)
    if options.rest:
        routes += create_rest_routes(handler, context_builder=builder, path_prefix="/rest")
    app = Starlette(routes=routes, exception_handlers={404: _http_error, 405: _http_error})
    served: Any = RestRefusals(app)
    if options.v03_compat:
        from .v03 import V03Files

        served = V03Files(served)
    return ObservedRequests(served, ctx.kernel, door=door_name, transport=ctx.transport_name), card


async def _http_error(request: Any, exc: Any) -> Any:
    """404 and 405 in the HTTP transport's JSON error shape."""
    from onedoor_transport_http.errors import STATUS_CODES, error_body
    from starlette.responses import Response

    status = getattr(exc, "status_code", 404)
    detail = f"no route for {request.url.path}" if status == 404 else f"{request.method} is not allowed here"
    headers = dict(getattr(exc, "headers", None) or {})
    return Response(error_body(STATUS_CODES.get(status, "error"), detail), status_code=status,
                    media_type="application/json", headers=headers)


__all__ = ["Principal", "PrincipalContextBuilder", "build_app", "request_handler"]
