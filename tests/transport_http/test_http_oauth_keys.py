"""OAuth mode when the authorization server misbehaves or is gone: the JWKS cached, refreshed
on a new kid but bounded, down (before and after the keys are known), its metadata wrong;
and RFC 7662 introspection (cached, refused, down). Real servers on 127.0.0.1: the test
authorization server and the transport's app on uvicorn."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import httpx
import pytest

pytest.importorskip("joserfc", reason="the OAuth tests run in nox session tests(oauth)")
pytest.importorskip("mcp.server.auth.routes", reason="the OAuth tests run in nox session tests(oauth)")

from onedoor.composition import ServeContext
from onedoor.testing import scripted_kernel
from onedoor_oauth_support import CLIENT_ID, CLIENT_SECRET, AuthServer, WhoDoor, challenge
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.testing import ThreadedServer

pytestmark = pytest.mark.timeout(120)

STATIC = "the-static-token-0123456789"


def serve(**options: Any) -> ThreadedServer:
    ctx = ServeContext(kernel=scripted_kernel(), door_names=["who"], transport_name="http")
    return ThreadedServer([WhoDoor()], ctx, HttpOptions(port=0, token=STATIC, **options))


def who(server: ThreadedServer, token: str | None) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.get(server.base_url + "/who", headers=headers, timeout=30)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def auth() -> Any:
    with AuthServer() as server:
        yield server


def test_keys_are_fetched_once_and_kept(auth: AuthServer) -> None:
    with serve(oauth_issuer=auth.issuer) as server:
        for sub in ("alice", "bob", "carol"):
            assert who(server, auth.token(sub=sub, aud=server.base_url)).json()["principal"] == f"oauth/{sub}"
    # discovered through the issuer's metadata, fetched once
    assert auth.hits["/.well-known/oauth-authorization-server"] == 1 and auth.hits["/jwks"] == 1


def test_made_up_kids_cost_no_more_fetches(auth: AuthServer) -> None:
    from joserfc.jwk import RSAKey

    stranger = RSAKey.generate_key(2048)
    with serve(oauth_issuer=auth.issuer, oauth_jwks_url=auth.base + "/jwks") as server:
        assert who(server, auth.token(aud=server.base_url)).status_code == 200
        for n in range(20):
            refused = who(server, auth.token(aud=server.base_url, kid=f"made-up-{n}", key=stranger))
            assert refused.status_code == 401 and "is not among the issuer's keys" in challenge(refused)["error_description"]
    assert auth.hits["/jwks"] == 1  # the last fetch is recent: a new kid does not fetch again


def test_the_jwks_going_down_keeps_the_known_keys_in_use(auth: AuthServer) -> None:
    keys = AuthServer()  # the JWKS on a server of its own, stopped halfway
    with keys:
        keys.issuer = auth.issuer
        with serve(oauth_issuer=auth.issuer, oauth_jwks_url=keys.base + "/jwks") as server:
            assert who(server, keys.token(aud=server.base_url)).status_code == 200
            keys.stop()
            assert httpx.get(server.base_url + "/healthz").status_code == 200
            again = who(server, keys.token(sub="bob", aud=server.base_url, alg="ES256", kid="e1"))
            assert again.status_code == 200 and again.json()["principal"] == "oauth/bob"
            assert who(server, STATIC).json()["principal"] == "local"
            assert who(server, None).status_code == 401


def test_keys_out_of_reach_from_the_start_answer_503_and_the_server_keeps_serving(auth: AuthServer) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/jwks"
    with serve(oauth_issuer=auth.issuer, oauth_jwks_url=dead) as server:
        for _ in range(5):
            refused = who(server, auth.token(aud=server.base_url))
            assert refused.status_code == 503 and refused.json()["error"] == "auth_unavailable"
            assert refused.headers["retry-after"] == "5" and "www-authenticate" not in refused.headers
            assert "cannot be fetched now" in refused.json()["detail"] and dead in refused.json()["detail"]
        assert who(server, None).status_code == 401  # no token is still a 401 with its challenge
        assert who(server, STATIC).json()["principal"] == "local"
        assert httpx.get(server.base_url + "/healthz").status_code == 200


def test_a_jwks_that_errs_is_asked_again_only_after_a_pause(auth: AuthServer) -> None:
    with serve(oauth_issuer=auth.issuer, oauth_jwks_url=auth.base + "/no-such-jwks") as server:
        for _ in range(10):
            refused = who(server, auth.token(aud=server.base_url))
            assert refused.status_code == 503 and "answered 404" in refused.json()["detail"]
    assert auth.hits["/no-such-jwks"] == 1


def test_metadata_that_is_not_the_issuers_is_refused(auth: AuthServer) -> None:
    with serve(oauth_issuer=auth.base + "/tenant") as server:  # no metadata there: 404 at both well-known URLs
        refused = who(server, auth.token(aud=server.base_url, iss=auth.base + "/tenant"))
    assert refused.status_code == 503 and "no authorization server metadata" in refused.json()["detail"]
    assert auth.hits["/.well-known/oauth-authorization-server/tenant"] == 1
    assert auth.hits["/tenant/.well-known/openid-configuration"] == 1


async def test_a_rotated_key_is_fetched_when_a_token_names_it(auth: AuthServer) -> None:
    from joserfc.jwk import KeySet, RSAKey
    from onedoor_transport_http.oauth.claims import Denied
    from onedoor_transport_http.oauth.fetch import Fetcher
    from onedoor_transport_http.oauth.jwt_check import JwtCheck
    from onedoor_transport_http.oauth.keys import JwksCache

    fetcher = Fetcher()
    check = JwtCheck(JwksCache(fetcher, auth.issuer, auth.base + "/jwks", min_refresh=0), auth.issuer, ["RS256"])
    audience = ["https://agent.example.com"]
    try:
        assert (await check.verify(auth.token(aud=audience[0]), audience)).subject == "alice"
        new = RSAKey.generate_key(2048, parameters={"kid": "k2", "use": "sig", "alg": "RS256"})
        auth.jwks = KeySet([new]).as_dict(private=False)  # k1 retired, k2 in
        rotated = await check.verify(auth.token(sub="bob", aud=audience[0], kid="k2", key=new), audience)
        assert rotated.subject == "bob" and auth.hits["/jwks"] == 2
        with pytest.raises(Denied, match="kid 'k1'"):
            await check.verify(auth.token(aud=audience[0]), audience)  # k1 is gone from the set
    finally:
        await fetcher.aclose()


async def test_a_token_that_passed_is_remembered_until_its_exp_or_the_ttl(auth: AuthServer) -> None:
    from onedoor_transport_http.oauth.claims import Denied
    from onedoor_transport_http.oauth.fetch import Fetcher
    from onedoor_transport_http.oauth.jwt_check import JwtCheck
    from onedoor_transport_http.oauth.keys import JwksCache

    class Counting(JwtCheck):
        checks = 0

        async def _check(self, token: str, audiences: list[str]) -> Any:
            self.checks += 1
            return await super()._check(token, audiences)

    now = [time.time()]
    fetcher = Fetcher()
    check = Counting(JwksCache(fetcher, auth.issuer, auth.base + "/jwks"), auth.issuer, ["RS256"], ttl=300,
                     clock=lambda: now[0])
    audience = ["https://agent.example.com"]
    short, long = auth.token(aud=audience[0], lifetime=60), auth.token(sub="bob", aud=audience[0], lifetime=3600)
    try:
        for token in (short, long, short, long):
            await check.verify(token, audience)
        assert check.checks == 2  # each checked once
        with pytest.raises(Denied, match="audience"):
            await check.verify(short, ["https://another.example.com"])  # remembered, but not for this resource
        assert check.checks == 2
        now[0] += 61  # past the short token's exp: checked again; the long one still remembered
        await check.verify(short, audience)
        await check.verify(long, audience)
        assert check.checks == 3
        now[0] += 300  # past the ttl: the long one is checked again too
        assert (await check.verify(long, audience)).subject == "bob" and check.checks == 4
    finally:
        await fetcher.aclose()


# -- RFC 7662 introspection -----------------------------------------------------------------------


def introspecting(auth: AuthServer, secret: str = CLIENT_SECRET, url: str = "") -> ThreadedServer:
    return serve(oauth_issuer=auth.issuer, oauth_introspection_url=url or auth.base + "/introspect",
                 oauth_client_id=CLIENT_ID, oauth_client_secret=secret, oauth_scopes=["onedoor"])


def test_introspected_tokens_act_as_their_subject_and_are_cached(auth: AuthServer) -> None:
    with introspecting(auth) as server:
        token = auth.opaque(sub="dana", aud=server.base_url + "/who")
        first = who(server, token)
        assert first.status_code == 200 and first.json()["principal"] == "oauth/dana"
        assert first.json()["oauth"]["scopes"] == ["onedoor"]
        assert who(server, token).json()["principal"] == "oauth/dana"
        assert auth.hits["/introspect"] == 1  # the second request used the cached answer
        assert who(server, STATIC).json()["principal"] == "local"


def test_introspection_refusals(auth: AuthServer) -> None:
    with introspecting(auth) as server:
        aud = server.base_url + "/who"
        cases = {
            "unknown to the issuer": ("opaque-token-nobody-issued-0123", 401, "not active"),
            "revoked": (auth.opaque(aud=aud, active=False), 401, "not active"),
            "another resource": (auth.opaque(aud="https://elsewhere.example"), 401, "audience"),
            "no audience": (auth.opaque(), 401, "audience"),
            "expired": (auth.opaque(aud=aud, exp=1000), 401, "expired"),
            "another issuer": (auth.opaque(aud=aud, iss="https://other.example"), 401, "issuer"),
            "no subject": (auth.opaque(aud=aud, sub=""), 401, "subject"),
            "missing scope": (auth.opaque(aud=aud, scope="other"), 403, "lacks the scope onedoor"),
        }
        for case, (token, status, words) in cases.items():
            refused = who(server, token)
            assert refused.status_code == status and words in challenge(refused)["error_description"], (case, refused.text)


def test_introspection_out_of_reach_or_refusing_onedoor_answers_503(auth: AuthServer) -> None:
    token = auth.opaque(aud="placeholder")
    with introspecting(auth, secret="not-the-secret-0123456789") as server:
        refused = who(server, token)
        assert refused.status_code == 503 and "refuses onedoor's client credentials" in refused.json()["detail"]
    with introspecting(auth, url=f"http://127.0.0.1:{closed_port()}/introspect") as server:
        refused = who(server, token)
        assert refused.status_code == 503 and "cannot be reached" in refused.json()["detail"]
        assert who(server, STATIC).status_code == 200


async def test_concurrent_requests_with_one_new_token_share_one_introspection(auth: AuthServer) -> None:
    from onedoor_transport_http.oauth.fetch import Fetcher
    from onedoor_transport_http.oauth.introspection import Introspection

    fetcher = Fetcher()
    check = Introspection(fetcher, auth.base + "/introspect", CLIENT_ID, CLIENT_SECRET, auth.issuer)
    token = auth.opaque(sub="erin", aud="https://agent.example.com")
    try:
        found = await asyncio.gather(*(check.verify(token, ["https://agent.example.com"]) for _ in range(10)))
    finally:
        await fetcher.aclose()
    assert {f.subject for f in found} == {"erin"} and auth.hits["/introspect"] == 1


def test_a_browser_client_of_a_listed_origin_reads_the_challenge_and_the_metadata(auth: AuthServer) -> None:
    origin = {"origin": "https://inspector.example"}
    with serve(oauth_issuer=auth.issuer, cors_origins=["https://inspector.example"]) as server:
        refused = httpx.get(server.base_url + "/who", headers=origin)
        document = httpx.get(server.base_url + "/.well-known/oauth-protected-resource/who", headers=origin)
    assert refused.status_code == 401 and refused.headers["access-control-allow-origin"] == "https://inspector.example"
    assert "www-authenticate" in refused.headers["access-control-expose-headers"].lower()
    assert challenge(refused)["resource_metadata"].endswith("/.well-known/oauth-protected-resource/who")
    assert document.status_code == 200 and document.headers["access-control-allow-origin"] == "https://inspector.example"
