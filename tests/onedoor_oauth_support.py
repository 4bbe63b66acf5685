"""A real OAuth authorization server for the tests, on uvicorn in a thread of the test process.

It is the MCP Python SDK's own authorization-server routes (``create_auth_routes``:
metadata, dynamic client registration, authorize with PKCE, token) over an in-memory
provider that approves every authorization at once (the "user" is the test) and issues
RS256 JWTs signed with joserfc, plus:

- ``GET /jwks``: the public keys (RSA ``k1``, EC ``e1``); ``jwks_uri`` is added to the
  SDK's metadata document so that a resource server can discover it;
- ``POST /introspect``: RFC 7662 for the opaque tokens :meth:`AuthServer.opaque` makes,
  with HTTP Basic client authentication.

Works with mcp 1.26 and 2.x (the provider's models are the same; the subject is kept
beside the code). Every call is counted per path (:attr:`AuthServer.hits`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import secrets
import socket
import threading
import time
from collections import Counter
from typing import Any

from joserfc import jwt as jose_jwt
from joserfc.jwk import ECKey, KeySet, OctKey, RSAKey

CLIENT_ID = "onedoor-rs"
CLIENT_SECRET = "introspection-secret-0123456789"
SCOPES = ("onedoor", "other")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class _Provider:
    """An in-memory OAuthAuthorizationServerProvider that approves at once."""

    def __init__(self, server: "AuthServer") -> None:
        self.server = server
        self.clients: dict[str, Any] = {}
        self.codes: dict[str, Any] = {}
        self.subjects: dict[str, str] = {}

    async def get_client(self, client_id: str) -> Any:
        return self.clients.get(client_id)

    async def register_client(self, info: Any) -> None:
        self.clients[info.client_id] = info

    async def authorize(self, client: Any, params: Any) -> str:
        from mcp.server.auth.provider import AuthorizationCode, construct_redirect_uri

        code = secrets.token_urlsafe(16)
        self.server.authorizations.append({"resource": params.resource, "scopes": params.scopes})
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or ["onedoor"], expires_at=time.time() + 60, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        self.subjects[code] = self.server.subject
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: Any, code: str) -> Any:
        return self.codes.get(code)

    async def exchange_authorization_code(self, client: Any, code: Any) -> Any:
        from mcp.shared.auth import OAuthToken

        self.codes.pop(code.code, None)
        token = self.server.token(sub=self.subjects.pop(code.code), aud=code.resource, scope=" ".join(code.scopes),
                                  client_id=client.client_id)
        return OAuthToken(access_token=token, expires_in=300, scope=" ".join(code.scopes))

    async def load_refresh_token(self, client: Any, token: str) -> Any:
        return None

    async def exchange_refresh_token(self, client: Any, token: Any, scopes: list[str]) -> Any:
        raise NotImplementedError

    async def load_access_token(self, token: str) -> Any:
        return None

    async def revoke_token(self, token: Any) -> None:
        return None


class AuthServer:
    """The authorization server; ``with AuthServer() as auth:`` serves it on 127.0.0.1."""

    def __init__(self, subject: str = "alice") -> None:
        self.subject = subject  # whom the next authorization is for
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.rsa = RSAKey.generate_key(2048, parameters={"kid": "k1", "use": "sig", "alg": "RS256"})
        self.ec = ECKey.generate_key("P-256", parameters={"kid": "e1", "use": "sig", "alg": "ES256"})
        self.jwks = KeySet([self.rsa, self.ec]).as_dict(private=False)
        self.opaque_tokens: dict[str, dict[str, Any]] = {}
        self.authorizations: list[dict[str, Any]] = []
        self.hits: Counter[str] = Counter()
        self.issuer = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None

    # -- tokens ----------------------------------------------------------------------------
    def token(self, sub: str | None = "alice", aud: Any = None, scope: str | None = "onedoor", lifetime: float = 300,
              kid: str = "k1", alg: str = "RS256", key: Any = None, **claims: Any) -> str:
        """A signed access token (RFC 9068 claims); ``None`` leaves a claim out."""
        now = int(time.time())
        body = {"iss": self.issuer, "sub": sub, "aud": aud, "scope": scope, "client_id": "test-client",
                "iat": now, "exp": now + int(lifetime), "jti": secrets.token_hex(8), **claims}
        body = {k: v for k, v in body.items() if v is not None}
        if key is None:
            key = self.ec if alg.startswith("ES") else self.rsa
        return jose_jwt.encode({"alg": alg, "kid": kid, "typ": "at+jwt"}, body, key)

    def hs256_token(self, **claims: Any) -> str:
        """A token MACed with a shared secret (HS256) instead of signed."""
        now = int(time.time())
        body = {"iss": self.issuer, "sub": "alice", "scope": "onedoor", "iat": now, "exp": now + 300, **claims}
        return jose_jwt.encode({"alg": "HS256", "kid": "k1"}, body, OctKey.import_key(secrets.token_bytes(32)))

    def unsigned_token(self, **claims: Any) -> str:
        """``alg: none``: no signature at all."""
        now = int(time.time())
        body = {"iss": self.issuer, "sub": "alice", "scope": "onedoor", "iat": now, "exp": now + 300, **claims}
        return f"{_b64(json.dumps({'alg': 'none', 'typ': 'JWT'}).encode())}.{_b64(json.dumps(body).encode())}."

    def opaque(self, **claims: Any) -> str:
        """An opaque token, known to the introspection endpoint with these claims (``active`` True unless said)."""
        token = secrets.token_urlsafe(24)
        now = int(time.time())
        self.opaque_tokens[token] = {"active": True, "iss": self.issuer, "sub": "alice", "scope": "onedoor",
                                     "client_id": "test-client", "exp": now + 300, "iat": now, **claims}
        return token

    # -- the app ----------------------------------------------------------------------------
    def app(self) -> Any:
        from mcp.server.auth.routes import create_auth_routes
        from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route

        issuer_url = AuthSettings(issuer_url=self.base, resource_server_url=None).issuer_url
        self.issuer = str(issuer_url)  # as the SDK writes it in the metadata (1.26 adds a "/")
        routes = create_auth_routes(_Provider(self), issuer_url=issuer_url,
                                    client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=list(SCOPES)))

        async def jwks(request: Request) -> Response:
            return JSONResponse(self.jwks)

        async def introspect(request: Request) -> Response:
            expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
            if request.headers.get("authorization") != expected:
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            form = await request.form()
            return JSONResponse(self.opaque_tokens.get(str(form.get("token")), {"active": False}))

        app = Starlette(routes=[*routes, Route("/jwks", jwks), Route("/introspect", introspect, methods=["POST"])])
        return _Counted(_WithJwksUri(app, self.base + "/jwks"), self.hits)

    def __enter__(self) -> "AuthServer":
        import uvicorn

        config = uvicorn.Config(self.app(), log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._server.serve(sockets=[self.sock])), daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started and time.monotonic() < deadline and self._thread.is_alive():
            time.sleep(0.02)
        if not self._server.started:
            raise RuntimeError("the test authorization server did not start")
        return self

    def stop(self) -> None:
        """Stop serving: its port refuses connections from then on."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(20)
        self.sock.close()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class _WithJwksUri:
    """Adds ``jwks_uri`` to the SDK's metadata document (the SDK's server has no keys of its own)."""

    def __init__(self, app: Any, jwks_uri: str) -> None:
        self.app = app
        self.jwks_uri = jwks_uri

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/.well-known/oauth-authorization-server":
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        body = bytearray()

        async def keep(message: Any) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            else:
                body.extend(message.get("body", b""))

        await self.app(scope, receive, keep)
        document = json.loads(bytes(body)) if start.get("status") == 200 else None
        if isinstance(document, dict):
            body[:] = json.dumps({**document, "jwks_uri": self.jwks_uri}).encode()
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": bytes(body)})


class _Counted:
    def __init__(self, app: Any, hits: Counter[str]) -> None:
        self.app = app
        self.hits = hits

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.hits[scope["path"]] += 1
        await self.app(scope, receive, send)




# -- what the tests read back ---------------------------------------------------------------
_PARAM = re.compile(r'(\w+)="([^"]*)"')


def challenge(response: Any) -> dict[str, str]:
    """The parameters of a response's ``WWW-Authenticate: Bearer …`` header ({} without one)."""
    header = response.headers.get("www-authenticate", "")
    if not header.startswith("Bearer "):
        return {}
    return dict(_PARAM.findall(header))


class WhoDoor:
    """A door at ``/who`` answering who the transport says is calling (principal, OAuth claims)."""

    name = "who"
    shapes = frozenset({"asgi"})

    def asgi_mount(self, ctx: Any) -> Any:
        from onedoor.composition import AsgiMount

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                return
            body = json.dumps({"principal": ctx.principal_of(scope), "oauth": scope.get("onedoor.oauth")})
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body.encode()})

        return AsgiMount(app=app, prefix="/who")


__all__ = ["CLIENT_ID", "CLIENT_SECRET", "SCOPES", "AuthServer", "WhoDoor", "challenge"]
