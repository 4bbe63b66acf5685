"""The MCP Python SDK client's own OAuth flow (1.x or 2.x) against `onedoor serve --door mcp --door rest`
configured for a local authorization server the test starts: 401 -> Protected Resource Metadata ->
authorization-server metadata -> dynamic registration -> authorize (PKCE, resource) -> token -> `ask`.
The thread the call starts belongs to the token's subject, at the REST door too."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

pytest.importorskip("joserfc", reason="the OAuth tests run in nox session tests(oauth)")
pytest.importorskip("mcp.client.auth", reason="the OAuth tests run in nox session tests(oauth)")

from onedoor_oauth_support import AuthServer
from onedoor_transport_http.testing import start_server

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def auth() -> Any:
    with AuthServer() as server:
        yield server


@pytest.fixture(scope="module")
def served(auth: AuthServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    db = tmp_path_factory.mktemp("oauth-mcp") / "threads.sqlite3"
    args = ["--door", "mcp", "--door", "rest", "-o", f"oauth_issuer={auth.issuer}", "-o", "oauth_scopes=onedoor",
            "-o", "scripted.delay=0", "-o", f"sqlite.path={db}"]
    with start_server(args) as server:
        yield server


class _Memory:
    """The client's TokenStorage, in memory."""

    tokens: Any = None
    client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, info: Any) -> None:
        self.client = info


def oauth_provider(url: str, scope: str = "onedoor") -> Any:
    """The SDK's OAuthClientProvider; the "user" approves at once (the authorize URL answers a redirect)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    try:
        from mcp.client.auth import AuthorizationCodeResult  # 2.x
    except ImportError:  # 1.x: the callback answers (code, state)
        AuthorizationCodeResult = None

    redirect: dict[str, Any] = {}

    async def redirect_handler(authorize_url: str) -> None:
        async with httpx.AsyncClient() as browser:
            answer = await browser.get(authorize_url)
        assert answer.status_code == 302, answer.text
        query = parse_qs(urlparse(answer.headers["location"]).query)
        redirect.update(code=query["code"][0], state=query.get("state", [None])[0])

    async def callback_handler() -> Any:
        if AuthorizationCodeResult is None:
            return redirect["code"], redirect["state"]
        return AuthorizationCodeResult(code=redirect["code"], state=redirect["state"])

    metadata = OAuthClientMetadata(client_name="onedoor-test", redirect_uris=["http://127.0.0.1:9/callback"],
                                   grant_types=["authorization_code", "refresh_token"], scope=scope)
    return OAuthClientProvider(server_url=url, client_metadata=metadata, storage=_Memory(),
                               redirect_handler=redirect_handler, callback_handler=callback_handler)


@asynccontextmanager
async def oauth_session(url: str, **provider: Any) -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(auth=oauth_provider(url, **provider)) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                yield session


def structured(result: Any) -> Any:
    return result.structuredContent if hasattr(result, "structuredContent") else result.structured_content


def is_error(result: Any) -> bool:
    return bool(getattr(result, "isError", None) or getattr(result, "is_error", None))


async def test_the_sdk_clients_oauth_flow_connects_and_asks(served: Any, auth: AuthServer) -> None:
    url = served.base_url + "/mcp"
    auth.subject = "alice"
    before = dict(auth.hits)
    async with oauth_session(url) as session:
        result = await session.call_tool("ask", {"message": "hello through oauth", "new_thread": True})
        again = await session.call_tool("ask", {"message": "and again", "thread": structured(result)["thread"]})
    assert not is_error(result) and result.content[0].text == "You said: hello through oauth (3 words, turn 1)"
    assert again.content[0].text == "You said: and again (2 words, turn 2)"
    # the client found the authorization server through onedoor's metadata and asked for this resource
    assert auth.authorizations[-1] == {"resource": url, "scopes": ["onedoor"]}
    for step in ("/.well-known/oauth-authorization-server", "/register", "/authorize", "/token"):
        assert auth.hits[step] > before.get(step, 0), step
    thread = structured(result)["thread"]
    # the thread is alice's, at the REST door too, and nobody else's
    alice = auth.token(sub="alice", aud=served.base_url + "/rest")
    seen = httpx.get(f"{served.base_url}/rest/threads/{thread}", headers={"authorization": f"Bearer {alice}"})
    assert seen.status_code == 200 and [m["content"] for m in seen.json()["messages"] if m["role"] == "user"] == [
        "hello through oauth", "and again"]
    bob = auth.token(sub="bob", aud=served.base_url + "/rest")
    assert httpx.get(f"{served.base_url}/rest/threads/{thread}", headers={"authorization": f"Bearer {bob}"}).status_code == 404


async def test_another_subject_through_the_same_flow_cannot_use_the_thread(served: Any, auth: AuthServer) -> None:
    url = served.base_url + "/mcp"
    auth.subject = "carol"
    async with oauth_session(url) as carol:
        started = await carol.call_tool("ask", {"message": "carol's", "new_thread": True})
    auth.subject = "dave"
    async with oauth_session(url) as dave:
        refused = await dave.call_tool("ask", {"message": "mine now", "thread": structured(started)["thread"]})
    assert is_error(refused) and "no thread" in refused.content[0].text


async def test_the_challenges_scope_decides_what_the_client_asks_for(served: Any, auth: AuthServer) -> None:
    """A client configured for scope ``other`` ends up with a token for ``onedoor``, the scope
    onedoor's challenge names (RFC 6750 ``scope``), and its call goes through."""
    auth.subject = "erin"
    before = len(auth.authorizations)
    async with oauth_session(served.base_url + "/mcp", scope="other") as session:
        result = await session.call_tool("ask", {"message": "right scope"})
    assert not is_error(result) and result.content[0].text.startswith("You said: right scope")
    asked = [a["scopes"] for a in auth.authorizations[before:]]
    assert asked and "onedoor" in asked[-1], asked
