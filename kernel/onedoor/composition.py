"""How doors and transports fit together: shapes, the door and transport interfaces.

A transport offers one *shape*; a door declares the shapes it can serve.

``asgi``     the transport hosts ASGI apps; several doors mount side by side on one
             server, each under its own prefix (http).
``channel``  the transport hands the door a :class:`Channel` per peer session: a stream
             of whole messages (stdio: one session, NDJSON lines; slim: one channel per
             SLIM session, one message per publish).
``rpc``      the transport hosts an RPC server with the gRPC-style registration
             convention (``add_<Service>Servicer_to_server(servicer, server)``: slim's
             is slimrpc); the door registers its services on it once, before serving
             (A2A over SLIM is slima2a's A2A service over slimrpc). For protocols that
             are request/response and server-streaming calls rather than a stream of
             whole messages.

A transport may offer more than one shape (``shapes``, in order of preference; ``shape``
is its first): slim offers ``channel`` and ``rpc``. A door is served in the first shape
of its transport that it also serves (:func:`shape_for`).

A **door** plugin object has::

    name: str                       # set by the loader from the entry-point name
    shapes: frozenset[str]          # {"asgi"}, {"channel"} or both
    framing: str = "ndjson"         # channel doors: "ndjson" (one JSON message a line on
                                    # stdio) or "text" (messages written as they are)
    Options: type | None            # optional dataclass of options (onedoor.plugins.options)
    def asgi_mount(self, ctx: ServeContext) -> AsgiMount          # if "asgi" in shapes
    async def serve_channel(self, channel: Channel, ctx: ServeContext) -> None
                                                                  # if "channel" in shapes
    def register_rpc(self, server: Any, ctx: ServeContext) -> None  # if "rpc" in shapes

A **transport** plugin object has::

    name: str
    shape: str                      # "asgi", "channel" or "rpc": the first of ``shapes``
    shapes: tuple[str, ...]         # optional: every shape it offers, preferred first
    max_doors: int | None           # None: any number of doors at once
    Options: type | None
    def early(self) -> None                          # optional; runs right after the transport
                                                     # loads, before any door or hook module
                                                     # (stdio protects stdout here)
    def prepare(self, options) -> None               # optional; runs once options are parsed,
                                                     # before serving (http checks the bind)
    def serve(self, doors: list, ctx: ServeContext) -> int   # blocks; returns exit code

Plugin modules must import nothing heavy at module level: the CLI imports a transport
to learn its shape, and `onedoor run` must stay fast.

The same contracts as typed protocols, for a door author's editor and mypy:
:class:`AsgiDoor`, :class:`ChannelDoor`, :class:`Transport`; what an asgi door hands
the transport is an :class:`AsgiMount`; what an asgi transport tells its doors is an
:class:`Endpoint` (``ctx.endpoint``: bound host and port, base URL, whether a token is
required), so a door never reads the transport's options.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from .errors import CompositionError
from .kernel import Kernel
from .principals import LOCAL_PRINCIPAL, PRINCIPAL_KEY, principal_of

SHAPES = ("asgi", "channel", "rpc")


class ChannelClosed(Exception):
    """Raised by :meth:`Channel.send` when the peer has gone."""


class MessageTooLarge(Exception):
    """Raised by :meth:`Channel.recv` for a message over the transport's limit.

    The oversized message has been discarded; the channel stays usable, so the door can
    answer with a protocol error and read on.
    """

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"message of {size} bytes is over the limit of {limit} bytes")
        self.size = size
        self.limit = limit


@runtime_checkable
class Channel(Protocol):
    """One peer session: whole messages in, whole messages out."""

    peer: str

    async def recv(self) -> str | None:
        """The next whole message, or None once the peer has closed the session."""

    async def send(self, message: str) -> None:
        """Send one whole message; raise ChannelClosed if the peer is gone."""

    async def close(self) -> None:
        """End the session from this side."""


@dataclass
class AsgiMount:
    """What an asgi door hands the HTTP transport.

    ``app`` is mounted under ``prefix``; ``lifespan`` (an async context manager
    factory, or None) is entered by the parent app at start-up, since mounted apps'
    own lifespans are not run. ``links`` are (label, path) pairs printed at start-up,
    e.g. ``("chat page", "/agui/")``.

    The transport guards every request before the door sees it (Host, Origin, token,
    content type, body size, JSON); a door tunes that guard for its own prefix only:

    ``content_types``    media types a POST (what starts or changes something) may
                         carry; others get 415. ``application/json``
                         also admits ``application/*+json``. A JSON body is decoded once,
                         under :mod:`onedoor.wire`, before the door runs.
    ``cors_headers``     request headers a listed cross-origin page may send (CORS
                         allow-headers), beyond ``authorization``, ``content-type``, ``accept``.
    ``cors_expose``      response headers such a page may read (CORS expose-headers).
    ``allowed_hosts``    extra ``Host`` values served under this prefix (``name``,
                         ``name:port``, ``name:*``; ``*`` turns the Host check off here).
    ``allowed_origins``  extra browser ``Origin`` values accepted under this prefix
                         (``https://app.example``, ``http://name:*``; ``*``: any).
    ``public_paths``     exact paths (anywhere on the server) answered to GET and HEAD
                         without the token: only for what tells a client how to
                         authenticate, such as A2A's agent card. Host and Origin are
                         still checked, and every other method still needs the token.
    """

    app: Any
    prefix: str
    lifespan: Callable[[], Any] | None = None
    links: list[tuple[str, str]] = field(default_factory=list)
    content_types: tuple[str, ...] = ("application/json",)
    cors_headers: tuple[str, ...] = ()
    cors_expose: tuple[str, ...] = ()
    public_paths: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()


@dataclass
class Endpoint:
    """What an asgi transport tells the doors it serves (``ServeContext.endpoint``).

    ``host`` is the bound address and ``port`` the bound port (the configured one until
    the socket is bound: with ``--port 0`` it is 0 until the first request arrives).
    ``token_required``: every request must carry the transport's token, so a door can
    say so (e.g. in its OpenAPI document) without reading the transport's options.
    """

    host: str = "127.0.0.1"
    port: int = 0
    token_required: bool = False
    scheme: str = "http"

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"{self.scheme}://{host}:{self.port}"


@dataclass
class ServeContext:
    """Everything a door or transport needs at serve time."""

    kernel: Kernel
    options: dict[str, Any] = field(default_factory=dict)  # plugin name -> parsed Options
    door_names: list[str] = field(default_factory=list)
    transport_name: str = ""
    hooks: Any = None  # pluggy hook relay, or None
    extras: dict[str, Any] = field(default_factory=dict)
    endpoint: Endpoint | None = None  # set by an asgi transport before it asks doors for mounts

    def options_for(self, plugin: str) -> Any:
        return self.options.get(plugin)

    @staticmethod
    def principal_of(scope: Any) -> str:
        """Who is calling, for an ASGI ``scope`` the transport let through: the principal
        its token names (a tokens file), else ``LOCAL`` (``"local"``), the one principal of a server
        without tokens or with one token (and of stdio and SLIM doors)."""
        return principal_of(scope)


@runtime_checkable
class Door(Protocol):
    name: str
    shapes: frozenset[str]


@runtime_checkable
class AsgiDoor(Protocol):
    """A door served by an asgi transport (``"asgi" in shapes``)."""

    name: str
    shapes: frozenset[str]

    def asgi_mount(self, ctx: ServeContext) -> AsgiMount:
        """The door's ASGI app and how to mount it; called once, before the server starts.
        ``ctx.endpoint`` says where the server listens and whether it requires a token."""
        ...


@runtime_checkable
class ChannelDoor(Protocol):
    """A door served over channels (``"channel" in shapes``); ``framing`` (``"ndjson"``
    or ``"text"``) tells a line-based transport how messages travel."""

    name: str
    shapes: frozenset[str]

    async def serve_channel(self, channel: Channel, ctx: ServeContext) -> None:
        """Serve one peer session until the channel closes (``recv()`` gives None)."""
        ...


@runtime_checkable
class RpcDoor(Protocol):
    """A door served by an RPC-hosting transport (``"rpc" in shapes``)."""

    name: str
    shapes: frozenset[str]

    def register_rpc(self, server: Any, ctx: ServeContext) -> None:
        """Register the door's services on ``server`` (gRPC-style ``add_*_to_server``);
        called once, before the transport starts serving."""
        ...


@runtime_checkable
class Transport(Protocol):
    """A transport: ``shape`` is ``"asgi"`` or ``"channel"``. Optional members (not part
    of the runtime check): ``max_doors``, ``Options``, ``early()``, ``prepare(options)``;
    see this module's docstring."""

    name: str
    shape: str

    def serve(self, doors: list[Any], ctx: ServeContext) -> int: ...


def offered_shapes(transport: Any) -> tuple[str, ...]:
    """The shapes a transport offers, preferred first."""
    shapes = getattr(transport, "shapes", None)
    return tuple(shapes) if shapes else (transport.shape,)


def shape_for(door: Any, transport: Any) -> str | None:
    """The shape ``door`` is served in over ``transport`` (None: they do not fit)."""
    return next((shape for shape in offered_shapes(transport) if shape in door.shapes), None)


def check_door(obj: Any) -> str | None:
    """Why ``obj`` is not a door, or None if it is one."""
    shapes = getattr(obj, "shapes", None)
    if not shapes or not isinstance(shapes, (set, frozenset, tuple, list)):
        return "it has no 'shapes' (a set of 'asgi', 'channel' and/or 'rpc')"
    unknown = set(shapes) - set(SHAPES)
    if unknown:
        return f"it declares unknown shape(s) {sorted(unknown)}"
    if "asgi" in shapes and not callable(getattr(obj, "asgi_mount", None)):
        return "it serves 'asgi' but has no asgi_mount(ctx)"
    if "channel" in shapes and not callable(getattr(obj, "serve_channel", None)):
        return "it serves 'channel' but has no serve_channel(channel, ctx)"
    if "rpc" in shapes and not callable(getattr(obj, "register_rpc", None)):
        return "it serves 'rpc' but has no register_rpc(server, ctx)"
    return None


def check_transport(obj: Any) -> str | None:
    shape = getattr(obj, "shape", None)
    if shape not in SHAPES:
        return f"its 'shape' is {shape!r}, not one of {', '.join(SHAPES)}"
    shapes = getattr(obj, "shapes", None)
    if shapes is not None:
        if not isinstance(shapes, (tuple, list)) or not shapes or shapes[0] != shape:
            return "its 'shapes' must be a non-empty tuple starting with its 'shape'"
        unknown = set(shapes) - set(SHAPES)
        if unknown:
            return f"it offers unknown shape(s) {sorted(unknown)}"
    if not callable(getattr(obj, "serve", None)):
        return "it has no serve(doors, ctx)"
    return None


def validate_combination(
    doors: Sequence[Any], transport: Any, transports_by_shape: dict[str, list[str]]
) -> None:
    """Raise CompositionError if these doors cannot be served over this transport."""
    offered = offered_shapes(transport)
    for door in doors:
        if shape_for(door, transport) is None:
            usable = sorted({t for s in door.shapes for t in transports_by_shape.get(s, [])})
            hint = (
                f"it can use: {', '.join(usable)}"
                if usable
                else f"no installed transport offers {' or '.join(sorted(door.shapes))}"
            )
            raise CompositionError(
                f"door {door.name!r} cannot be served over transport {transport.name!r} "
                f"(which offers {' and '.join(repr(s) for s in offered)}; the door serves "
                f"{', '.join(sorted(door.shapes))}); {hint}"
            )
    limit = getattr(transport, "max_doors", None)
    if limit is not None and len(doors) > limit:
        raise CompositionError(
            f"transport {transport.name!r} serves {limit} door at a time; got {len(doors)}: "
            + ", ".join(d.name for d in doors)
        )
    names = [d.name for d in doors]
    if len(set(names)) != len(names):
        raise CompositionError("a door was named twice: " + ", ".join(names))


__all__ = [
    "LOCAL_PRINCIPAL", "PRINCIPAL_KEY", "SHAPES", "AsgiDoor", "AsgiMount", "Channel", "ChannelClosed", "ChannelDoor",
    "Door", "Endpoint", "MessageTooLarge", "RpcDoor", "ServeContext", "Transport", "check_door", "check_transport",
    "offered_shapes", "shape_for", "validate_combination",
]
