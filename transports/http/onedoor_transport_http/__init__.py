"""The HTTP transport: one uvicorn server, every asgi door mounted under its prefix.

Safe by default: binds 127.0.0.1; binding any other address without a token is refused;
when a token is set, every request to every door must carry it (``Authorization:
Bearer …``; a page opened in a browser may pass ``?token=…`` once, swapped at once for a
cookie that expires, changes with each server start and works only from the server's own
pages), checked once, in constant time. With ``oauth_issuer`` an authorization server's
access tokens are accepted too (:mod:`.oauth`: an OAuth 2.1 resource server). Every
request also passes the same guard against web pages the user visits (see
:mod:`.guard`): ``Host`` must be a loopback name, the bound address or an allowed host
(DNS rebinding); a foreign ``Origin`` is refused; what starts or changes something must
carry its own content type (no CORS "simple requests"); bodies are capped and JSON is
decoded once, under :mod:`onedoor.wire`. CORS is off unless origins are listed.

This module is what the entry point names: it imports no server library until
:meth:`HttpTransport.serve` runs.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onedoor import CompositionError

if TYPE_CHECKING:
    from onedoor import ServeContext

__version__ = "0.1.0"


@dataclass
class HttpOptions:
    host: str = field(default="127.0.0.1", metadata={"help": "address to bind"})
    port: int = field(default=8000, metadata={"help": "port to bind (0: any free port)"})
    token: str = field(default="", metadata={"help": "bearer token required on every request", "secret": True})
    tokens_file: str = field(
        default="", metadata={"help": "file of PRINCIPAL TOKEN lines: several tokens, each acting as its principal"}
    )
    cors_origins: list[str] = field(default_factory=list, metadata={"help": "origins allowed by CORS (comma-separated)"})
    allowed_hosts: list[str] = field(
        default_factory=list,
        metadata={"help": "Host names served besides loopback and the bound address (name, name:port, name:*; *: any)"},
    )
    max_body_bytes: int = field(default=16 * 1024 * 1024, metadata={"help": "largest request body accepted"})
    cookie_max_age: int = field(
        default=4 * 3600, metadata={"help": "seconds the cookie of a page opened with ?token= stays valid"}
    )
    page_cookie_secret: str = field(default="", metadata={
        "secret": True,
        "help": "servers behind one balancer: the same secret (32+ characters) on each makes the page's cookie good "
                "on all of them (and across restarts, within cookie_max_age); unset: each server start has its own"})
    shutdown_grace: float = field(default=5.0, metadata={"help": "seconds open streams get to end on shutdown"})
    drain_grace: float = field(default=0.0, metadata={
        "help": "on SIGTERM, seconds the runs going on get to finish before the rest are cancelled (new runs are "
                "refused 503 draining and /readyz says not ready meanwhile); 0: cancel at once"})
    log_level: str = field(default="warning", metadata={"help": "uvicorn log level"})
    public_url: str = field(default="", metadata={
        "help": "the URL clients reach this server at, scheme://host[:port] (behind a proxy); OAuth resource URLs "
                "and audiences are built from it, and its host is served"})
    # OAuth 2.1 resource server (see onedoor_transport_http.oauth); needs onedoor-transport-http[oauth]
    oauth_issuer: str = field(default="", metadata={
        "help": "OAuth authorization server (issuer URL): its access tokens are accepted beside the static tokens, "
                "their subject acting as principal oauth/<sub>"})
    oauth_jwks_url: str = field(default="", metadata={"help": "the issuer's JWKS (default: jwks_uri of its metadata)"})
    oauth_audience: list[str] = field(default_factory=list, metadata={
        "help": "audiences accepted (default: the door's URL, e.g. https://host/mcp, or the server's URL)"})
    oauth_scopes: list[str] = field(default_factory=list, metadata={"help": "scopes every OAuth token must carry"})
    oauth_introspection_url: str = field(default="", metadata={
        "help": "RFC 7662 introspection endpoint: tokens are checked there instead of as JWTs"})
    oauth_client_id: str = field(default="", metadata={"help": "onedoor's client id at the introspection endpoint"})
    oauth_client_secret: str = field(default="", metadata={
        "help": "onedoor's client secret at the introspection endpoint", "secret": True})
    oauth_algorithms: list[str] = field(default_factory=lambda: ["RS256", "ES256"], metadata={
        "help": "JWT signature algorithms accepted"})
    oauth_cache_seconds: float = field(default=300.0, metadata={
        "help": "seconds the issuer's keys, tokens that passed and introspection answers are kept"})

    def __post_init__(self) -> None:
        if not self.drain_grace >= 0:
            raise ValueError("drain_grace must be 0 or more seconds")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port {self.port} is out of range")
        if self.token and len(self.token) < 16:
            raise ValueError("the token must be at least 16 characters")
        if self.max_body_bytes < 1024:
            raise ValueError("max_body_bytes must be at least 1024")
        if self.cookie_max_age < 1:
            raise ValueError("cookie_max_age must be at least 1 second")
        if self.page_cookie_secret and len(self.page_cookie_secret) < 32:
            raise ValueError("page_cookie_secret must be at least 32 characters")
        from .oauth import check_options

        check_options(self)

    @property
    def requires_token(self) -> bool:
        """Every request must carry a token: a static one, or (OAuth) one of the issuer's."""
        return bool(self.token or self.tokens_file or self.oauth_issuer)

    @property
    def served_hosts(self) -> list[str]:
        """``allowed_hosts``, plus the host of ``public_url``."""
        from urllib.parse import urlsplit

        return [*self.allowed_hosts, *([urlsplit(self.public_url).netloc] if self.public_url else [])]

    def principals(self) -> dict[str, str]:
        """``{token: principal}`` of every accepted token (empty: no token required)."""
        from .principals import all_tokens

        return all_tokens(self.token, self.tokens_file)


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(options: HttpOptions) -> None:
    """Fail closed: a non-loopback address needs a token."""
    if options.tokens_file:
        options.principals()  # a bad tokens file is an error before the server starts
    if options.oauth_issuer:
        _check_oauth(options)
    if not is_loopback(options.host) and not options.requires_token:
        raise CompositionError(
            f"refusing to listen on {options.host} without a token: anyone who can reach it could use the agent. "
            "Pass --token (16+ characters) or set ONEDOOR_HTTP_TOKEN, set oauth_issuer, or bind 127.0.0.1"
        )


def _check_oauth(options: HttpOptions) -> None:
    from .hosts import WILDCARD_BINDS
    from .oauth import INSTALL_HINT, missing_packages

    missing = missing_packages()
    if missing:
        raise CompositionError(f"oauth_issuer needs {', '.join(missing)}: {INSTALL_HINT}")
    if options.host in WILDCARD_BINDS and not options.public_url:
        raise CompositionError(
            f"with oauth_issuer on {options.host or 'every address'}, set public_url (the URL clients use, e.g. "
            "https://agent.example.com): tokens are checked to be for it"
        )


class HttpTransport:
    name = "http"
    shape = "asgi"
    max_doors = None
    Options = HttpOptions

    def prepare(self, options: HttpOptions | None) -> None:
        """Fail before anything starts: a public bind without a token, a bad tokens file."""
        check_bind(options or HttpOptions())

    def serve(self, doors: list[Any], ctx: ServeContext) -> int:
        from .app import endpoint_for
        from .server import run_server

        options = ctx.options_for(self.name) or HttpOptions()
        check_bind(options)
        ctx.endpoint = endpoint_for(options)  # what the doors may know (host, port, token required)
        return run_server(doors, ctx, options)


transport = HttpTransport
