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

Tasks live in the thread store (:mod:`.tasks`), so any server sharing it answers for
them; a task another server runs is asked about through the kernel (:mod:`.elsewhere`).

In front of the routes: every request is told to the request observers (:mod:`.observed`),
and a 0.3 file part whose bytes are not base64 is answered -32602 (:mod:`.v03`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from a2a.auth.user import User
from a2a.server.routes.common import DefaultServerCallContextBuilder
from onedoor_transport_http.body import JSON_BODY

from . import CARD_PATH, A2aOptions
from .card import agent_card, card_endpoint
from .handler import check_message
from .refusals import NOTED, RestRefusals

if TYPE_CHECKING:
    from onedoor import ServeContext

log = logging.getLogger("onedoor.door.a2a")


ORIGIN = "onedoor.a2a.origin"  # call-context state key: scheme://host[:port] the request was sent to


class Principal(User):
    """An onedoor principal as the SDK's user (its ``user_name`` scopes the task store);
    authenticated when the transport's guard checked its token (or a SLIM peer's secret)."""

    def __init__(self, name: str, authenticated: bool = True) -> None:
        self.name = name
        self.authenticated = authenticated

    @property
    def is_authenticated(self) -> bool:
        return self.authenticated

    @property
    def user_name(self) -> str:
        return self.name


class PrincipalContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, with the principal the transport's guard authenticated."""

    def build(self, request: Any) -> Any:
        from .card import origin_of

        context = super().build(request)
        noted = request.scope.get(NOTED)
        if noted is not None:  # an HTTP+JSON request: where a refusal is noted (refusals.RestRefusals)
            context.state[NOTED] = noted
        context.state[ORIGIN] = origin_of(request.scope)
        return context

    def build_user(self, request: Any) -> User:
        from onedoor import ServeContext
        from onedoor.composition import PRINCIPAL_KEY

        return Principal(ServeContext.principal_of(request.scope), authenticated=PRINCIPAL_KEY in request.scope)


def checked_handler_class() -> type:
    """The request handler class the door uses (:class:`~.handler.CheckedRequestHandler`)."""
    from .handler import CheckedRequestHandler

    return CheckedRequestHandler


def request_handler(
    ctx: ServeContext, options: A2aOptions | None = None, *, door_name: str = "a2a", executors: list[Any] | None = None
) -> Any:
    """The a2a-sdk request handler for this server: tasks run through ``ctx.kernel`` and are
    kept in its store (:mod:`.tasks`; in memory when it keeps no records), with their push
    configs (:mod:`.push_configs`, delivered by :mod:`.push`); the extended card for
    authenticated callers; the cards signed with ``signing_key``. Its executor is appended
    to ``executors`` (the door tells them when runs end).

    An input-required task's SDK state (its ``ActiveTask``) is kept until the task ends:
    its run's expiry ends it (:mod:`.parked`), so a2a-sdk 1.3's
    ``interrupted_task_timeout`` is not used (it would close the queue the ending goes to).
    """
    from .admission import AdmittingContextBuilder
    from .card import offers_extended_card
    from .content import modes
    from .elsewhere import Elsewhere
    from .executor import KernelExecutor, tell
    from .tasks import RecordTaskStore, task_store

    options = options or A2aOptions()
    executor = KernelExecutor(
        ctx.kernel, door=door_name, ttl=options.question_ttl or None, fallback=options.ask_fallback
    )
    if executors is not None:
        executors.append(executor)
    origin = ctx.endpoint.base_url if ctx.endpoint is not None else "http://127.0.0.1:0"
    store = executor.tasks = task_store(ctx.kernel)
    # tasks in the store: a request may be about a task another server (or none) runs
    places = Elsewhere(ctx.kernel, store, tell, modes(ctx.kernel)) if isinstance(store, RecordTaskStore) else None
    card = agent_card(ctx, options, origin)
    sign = _signer(options)
    handler = checked_handler_class()(
        agent_executor=executor, task_store=store, agent_card=card,
        request_context_builder=AdmittingContextBuilder(executor, store, places),
        extended_agent_card=card if offers_extended_card(ctx, options) else None,
        extended_card_modifier=_extended_card_modifier(ctx, options, origin, sign),
        **_push(ctx, options),
    )
    handler.places = places
    handler.sign = sign
    return handler


def _push(ctx: ServeContext, options: A2aOptions) -> dict[str, Any]:
    """The handler's push-notification parts (none when ``push`` is off)."""
    if not options.push:
        return {}
    from .push import PushSender, url_validator
    from .push_configs import push_configs

    configs = push_configs(ctx.kernel)
    sender = PushSender(configs, allow_private=options.push_allow_private, retries=options.push_retries,
                        timeout=options.push_timeout)
    return {"push_config_store": configs, "push_sender": sender,
            "push_url_validator": url_validator(options.push_allow_private)}


def _signer(options: A2aOptions) -> Any:
    if not options.signing_key:
        return None
    from .signing import card_signer

    return card_signer(options.signing_key, kid=options.signing_kid, alg=options.signing_alg, jku=options.signing_jku)


def _extended_card_modifier(ctx: ServeContext, options: A2aOptions, origin: str, sign: Any) -> Any:
    """The extended card, as the caller reached the server (signed like the public one),
    for an authenticated caller only."""
    from .card import extended_card

    ttl = options.question_ttl or ctx.kernel.limits.question_ttl

    async def modify(card: Any, context: Any) -> Any:
        from a2a.utils.errors import UnsupportedOperationError

        user = getattr(context, "user", None)
        if user is None or not user.is_authenticated:
            raise UnsupportedOperationError(message="the extended card is for authenticated callers")
        state = getattr(context, "state", None) or {}
        made = extended_card(ctx, options, state.get(ORIGIN) or origin, ttl)
        return sign(made) if sign is not None else made

    return modify


def build_app(
    ctx: ServeContext, options: A2aOptions, *, door_name: str = "a2a", executors: list[Any] | None = None,
    handlers: list[Any] | None = None,
) -> tuple[Any, Any]:
    """(the ASGI app to mount under the prefix, the card endpoint for the server root); the
    request handler is appended to ``handlers`` (see :func:`closed`)."""
    from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
    from starlette.applications import Starlette
    from starlette.routing import Route

    from . import quiet_logs
    from .observed import ObservedRequests

    quiet_logs.install()
    handler = request_handler(ctx, options, door_name=door_name, executors=executors)
    if handlers is not None:
        handlers.append(handler)
    builder = PrincipalContextBuilder()
    card = card_endpoint(ctx, options, handler.sign)
    routes: list[Any] = [Route(CARD_PATH, card, methods=["GET"])]
    routes += [_decoded_once(route) for route in
               create_jsonrpc_routes(handler, rpc_url="/", context_builder=builder, enable_v0_3_compat=options.v03_compat)]
    if options.rest:
        routes += create_rest_routes(handler, context_builder=builder, path_prefix="/rest")
    app = Starlette(routes=routes, exception_handlers={404: _http_error, 405: _http_error})
    served: Any = RestRefusals(app)
    if options.v03_compat:
        from .v03 import V03Files

        served = V03Files(served)
    return ObservedRequests(served, ctx.kernel, door=door_name, transport=ctx.transport_name), card


def _decoded_once(route: Any) -> Any:
    """The SDK's JSON-RPC route, given the body the HTTP transport's guard decoded.

    The SDK reads the request with ``await request.json()``, which joins the body's bytes
    into a copy and decodes them again: for a 5 MB file part, two more copies of the
    request held for the whole call. Starlette keeps what ``json()`` returned on the
    request (``_json``), so the endpoint sets it to the guard's value (decoded under
    :func:`onedoor.wire.decode_json`, the same JSON) and the SDK reads that.
    """
    from starlette.routing import Route

    endpoint = route.endpoint

    async def handle(request: Any) -> Any:
        decoded = request.scope.get(JSON_BODY, ...)
        if decoded is not ...:
            request._json = decoded
        return await endpoint(request)

    return Route(route.path, handle, methods=sorted(route.methods or ()), name=route.name)


async def closed(handler: Any, timeout: float = 5.0) -> None:
    """A server stopping: the task saves on their way go to the store (at most ``timeout``
    seconds), the push sender lets go of its connections."""
    flush = getattr(handler.task_store, "flush", None)
    try:
        if flush is not None:
            await asyncio.wait_for(flush(), timeout)
    except TimeoutError:
        log.warning("A2A: some task updates were not stored before the server stopped")
    sender = getattr(handler, "_push_sender", None)
    if sender is not None and hasattr(sender, "aclose"):
        await sender.aclose()


async def _http_error(request: Any, exc: Any) -> Any:
    """404 and 405 in the HTTP transport's JSON error shape."""
    from onedoor_transport_http.errors import STATUS_CODES, error_body
    from starlette.responses import Response

    status = getattr(exc, "status_code", 404)
    detail = f"no route for {request.url.path}" if status == 404 else f"{request.method} is not allowed here"
    headers = dict(getattr(exc, "headers", None) or {})
    return Response(error_body(STATUS_CODES.get(status, "error"), detail), status_code=status,
                    media_type="application/json", headers=headers)


__all__ = ["ORIGIN", "Principal", "PrincipalContextBuilder", "build_app", "check_message", "checked_handler_class",
           "closed", "request_handler"]
