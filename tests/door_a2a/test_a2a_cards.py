"""The public card, the authenticated extended card and signed cards, with the official
Python client (a2a-sdk) and its signature verifier, against real servers.

- Anyone may read the public card (it says how to authenticate); it offers the extended
  card when the server requires a token. ``GetExtendedAgentCard`` (JSON-RPC, HTTP+JSON)
  without the token is refused by the transport's guard (401) and answers nothing; with
  it, the extended card: the public card and the server's limits. A server without a
  token offers none (the SDK's "not supported" error, -32004; the SDK client does not ask).
- With ``-o a2a.signing_key=...`` both cards carry a signature that a2a-sdk's verifier
  accepts with the public key (EC P-256 / ES256, RSA / RS256, Ed25519 / EdDSA with the
  default key id: the key's RFC 7638 thumbprint), and rejects with another key or once the
  card is changed; a key file that is not a usable key stops the server at start-up, saying why.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.types import GetExtendedAgentCardRequest
from a2a_helpers import TOKEN, A2aServer, authorized, clients

pytestmark = pytest.mark.timeout(120)

LIMITS_URI = "https://github.com/onedoor-dev/onedoor/blob/main/plugins/door-a2a/README.md#the-extended-card"


def extension_params(card: Any) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    found = [e for e in card.capabilities.extensions if e.uri == LIMITS_URI]
    return MessageToDict(found[0].params) if found else {}


async def test_the_public_card_for_anyone_the_extended_card_for_the_authenticated(served: Any) -> None:
    async with httpx.AsyncClient(timeout=30) as anonymous:
        public = await A2ACardResolver(anonymous, served.a2a_url).get_agent_card()
        assert public.capabilities.extended_agent_card is True
        assert extension_params(public) == {}, "the public card holds no limits"
        rpc = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}
        for response in (await anonymous.post(served.a2a_url + "/", json=rpc, headers={"A2A-Version": "1.0"}),
                         await anonymous.get(served.a2a_url + "/rest/extendedAgentCard"),
                         await anonymous.post(served.a2a_url + "/", json=rpc,
                                              headers={"A2A-Version": "1.0", "Authorization": "Bearer wrong"})):
            assert response.status_code == 401, response.text
            assert "limits" not in response.text and "max_message_chars" not in response.text
    async with authorized() as http:
        for binding in ("JSONRPC", "HTTP+JSON"):
            _, client, _ = await clients(http, served.a2a_url, binding)
            extended = await client.get_extended_agent_card(GetExtendedAgentCardRequest())
            limits = extension_params(extended)
            assert limits["max_message_chars"] == 100_000 and limits["question_ttl"] == 600, limits
            assert limits["media_types"] == ["*/*"]
            assert extended.name == public.name and [s.id for s in extended.skills] == ["chat"]
            assert [i.url for i in extended.supported_interfaces] == [i.url for i in public.supported_interfaces]


async def test_without_a_token_there_is_no_extended_card(tmp_path: Path) -> None:
    server = A2aServer(["-o", "sqlite.path=" + str(tmp_path / "threads.sqlite3")], tmp_path)
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            card, client, _ = await clients(http, server.a2a_url)
            assert card.capabilities.extended_agent_card is False
            got = await client.get_extended_agent_card(GetExtendedAgentCardRequest())  # the client keeps the public one
            assert extension_params(got) == {}
            rpc = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}
            answer = (await http.post(server.a2a_url + "/", json=rpc, headers={"A2A-Version": "1.0"})).json()
            assert answer["error"]["code"] == -32004 and "extended cards" in answer["error"]["message"], answer
    finally:
        server.stop()


def make_key(path: Path, kind: str) -> bytes:
    """A private key in ``path`` (PEM); returns the public key (PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    key: Any = {"ec": lambda: ec.generate_private_key(ec.SECP256R1()), "rsa": lambda: rsa.generate_private_key(65537, 2048),
                "ed25519": ed25519.Ed25519PrivateKey.generate}[kind]()
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def verifier(public_pem: bytes, kid: str) -> Any:
    from a2a.utils.signing import create_signature_verifier

    def key_for(seen_kid: str | None, jku: str | None) -> bytes:
        assert seen_kid == kid, seen_kid
        return public_pem

    return create_signature_verifier(key_for, ["ES256", "RS256", "EdDSA"])


def thumbprint(public_pem: bytes, algorithm: str) -> str:
    """RFC 7638, from PyJWT's JWK of the key."""
    import base64
    import hashlib
    import json

    import jwt
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    jwk = jwt.algorithms.get_default_algorithms()[algorithm].to_jwk(load_pem_public_key(public_pem), as_dict=True)
    members = {k: jwk[k] for k in {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}[jwk["kty"]]}
    digest = hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@pytest.mark.parametrize(("kind", "algorithm", "kid"), [("ec", "ES256", "card-key-1"), ("rsa", "RS256", "card-key-2"),
                                                         ("ed25519", "EdDSA", "")])
async def test_signed_cards_verify_with_the_sdk(tmp_path: Path, kind: str, algorithm: str, kid: str) -> None:
    pytest.importorskip("jwt", reason="signed cards need PyJWT (a2a-sdk[signing])")
    import base64
    import json

    from a2a.utils.signing import InvalidSignaturesError

    key_file = tmp_path / "card-key.pem"
    public_pem = make_key(key_file, kind)
    other_pem = make_key(tmp_path / "other.pem", kind)
    named = ["-o", f"a2a.signing_kid={kid}"] if kid else []
    server = A2aServer(["--token", TOKEN, "-o", "sqlite.path=" + str(tmp_path / "threads.sqlite3"),
                        "-o", f"a2a.signing_key={key_file}", *named,
                        "-o", "a2a.signing_jku=https://keys.example/jwks.json"], tmp_path)
    kid = kid or thumbprint(public_pem, algorithm)  # the default key id
    try:
        async with authorized() as http:
            for base in (server.a2a_url, server.base_url):
                card = await A2ACardResolver(http, base).get_agent_card(signature_verifier=verifier(public_pem, kid))
                assert len(card.signatures) == 1
                header = json.loads(base64.urlsafe_b64decode(card.signatures[0].protected + "=="))
                assert header == {"alg": algorithm, "typ": "JOSE", "kid": kid, "jku": "https://keys.example/jwks.json"}
                with pytest.raises(InvalidSignaturesError):
                    await A2ACardResolver(http, base).get_agent_card(signature_verifier=verifier(other_pem, kid))
            _, client, _ = await clients(http, server.a2a_url)
            extended = await client.get_extended_agent_card(GetExtendedAgentCardRequest(),
                                                            signature_verifier=verifier(public_pem, kid))
            assert extension_params(extended)["max_parts"] == 32
            tampered = await A2ACardResolver(http, server.a2a_url).get_agent_card()
            tampered.name = "someone else"
            with pytest.raises(InvalidSignaturesError):
                verifier(public_pem, kid)(tampered)
    finally:
        server.stop()


def test_a_key_that_cannot_sign_stops_the_server_saying_why(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-key.pem"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n", "utf-8")
    done = subprocess.run([sys.executable, "-m", "onedoor", "serve", "--door", "a2a", "--port", "0", "--token", TOKEN,
                           "-o", f"a2a.signing_key={bad}", "-o", "sqlite.path=" + str(tmp_path / "t.sqlite3")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "a2a.signing_key: cannot read a PEM private key" in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
