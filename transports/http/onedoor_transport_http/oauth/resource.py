"""This server as an OAuth protected resource: its URLs, its metadata (RFC 9728), its challenges (RFC 6750).

Resource URLs: each door's is the server's URL plus its prefix (``https://host/mcp``); the
server's own is the bare URL. The server's URL is ``public_url`` when set (behind a
proxy). Otherwise it is ``http://NAME:PORT`` for the bound address and port, under each
loopback name when bound to loopback: the request's ``Host`` picks among those names (a
client on ``localhost`` reads metadata naming ``localhost``) but never adds one, so a
forged ``Host`` cannot make the server accept a token meant for another resource. A
wildcard bind (0.0.0.0) has no such URL: OAuth there needs ``public_url``.

Audiences accepted under a door: its resource URL and the server's URL (each with or
without a final ``/``), or exactly ``oauth_audience`` when set.
"""

from __future__ import annotations

from typing import Any

from ..asgi_types import Scope
from ..hosts import WILDCARD_BINDS, is_loopback_name
from . import LOOPBACK_NAMES, WELL_KNOWN, OAuthSettings


def _quoted(text: str) -> str:
    """``text`` as an RFC 6750 quoted value: printable ASCII without ``"`` and ``\\``."""
    return "".join(c if " " <= c <= "~" and c not in '"\\' else "?" for c in text[:300])


class ResourceUrls:
    def __init__(self, settings: OAuthSettings, endpoint: Any, prefixes: list[str]) -> None:
        self.settings = settings
        self.endpoint = endpoint  # its port is known once bound (--port 0)
        self.prefixes = sorted({p.rstrip("/") for p in prefixes if p.rstrip("/")}, key=len, reverse=True)
        self._audiences: dict[tuple[str, int], list[str]] = {}  # (prefix, port) -> audiences

    def bases(self) -> list[str]:
        """Every URL of this server (the first is the one named when the request's Host is none of them)."""
        if self.settings.public_url:
            return [self.settings.public_url]
        host, port, scheme = self.endpoint.host, self.endpoint.port, self.endpoint.scheme
        if host in WILDCARD_BINDS:
            return []
        names = LOOPBACK_NAMES if is_loopback_name(host.strip("[]")) else (f"[{host}]" if ":" in host else host,)
        return [f"{scheme}://{name}:{port}" for name in names]

    def base_for(self, scope: Scope) -> str:
        bases = self.bases()
        if len(bases) > 1:
            for name, value in scope.get("headers", ()):
                if name == b"host":
                    wanted = f"{self.endpoint.scheme}://{value.decode('latin-1').lower()}"
                    if wanted in bases:
                        return wanted
                    break
        return bases[0] if bases else ""

    def audiences(self, prefix: str) -> list[str]:
        """The audiences a token must name (one of) under the door at ``prefix``."""
        key = (prefix, self.endpoint.port)
        found = self._audiences.get(key)
        if found is None:
            found = self._audiences[key] = self._audiences_of(prefix)
        return found

    def _audiences_of(self, prefix: str) -> list[str]:
        if self.settings.audience:
            return list(self.settings.audience)
        out: list[str] = []
        for base in self.bases():
            out += [base + prefix, base + prefix + "/"] if prefix else []
        for base in self.bases():
            out += [base, base + "/"]
        return out

    def metadata_url(self, scope: Scope, prefix: str) -> str:
        return self.base_for(scope) + WELL_KNOWN + prefix

    def metadata(self, scope: Scope, prefix: str) -> dict[str, Any]:
        """The Protected Resource Metadata of the door at ``prefix`` (``""``: the server)."""
        document: dict[str, Any] = {
            "resource": self.base_for(scope) + prefix,
            "authorization_servers": [self.settings.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "onedoor" + (f" {prefix}" if prefix else ""),
        }
        if self.settings.scopes:
            document["scopes_supported"] = list(self.settings.scopes)
        return document

    def challenge(self, scope: Scope, prefix: str, error: str, description: str) -> list[tuple[bytes, bytes]]:
        """The ``WWW-Authenticate`` header of a refusal (``error``: invalid_token or insufficient_scope)."""
        parts = [f'error="{error}"', f'error_description="{_quoted(description)}"']
        if self.settings.scopes:
            parts.append(f'scope="{_quoted(" ".join(self.settings.scopes))}"')
        parts.append(f'resource_metadata="{_quoted(self.metadata_url(scope, prefix))}"')
        return [(b"www-authenticate", ("Bearer " + ", ".join(parts)).encode("ascii"))]

    def metadata_paths(self) -> dict[str, str]:
        """``{path of a metadata document: the prefix it describes}``."""
        return {WELL_KNOWN: "", **{WELL_KNOWN + p: p for p in self.prefixes}}

    def routes(self) -> list[Any]:
        """Starlette routes answering every metadata document (GET/HEAD, open to every caller)."""
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        def endpoint(prefix: str) -> Any:
            async def metadata(request: Request) -> JSONResponse:
                return JSONResponse(self.metadata(request.scope, prefix), headers={"cache-control": "max-age=300"})

            return metadata

        return [Route(path, endpoint(prefix), methods=["GET", "HEAD"]) for path, prefix in self.metadata_paths().items()]


__all__ = ["ResourceUrls"]
