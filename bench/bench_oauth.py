"""OAuth check benchmark: the cost per request of an OAuth access token (a JWT, JWKS cached) against a static token.

Two measures, each side by side in one run, interleaved round by round:

``guard``  the HTTP transport's app called in-process (no socket): the guard and a door that
           answers at once, for a request with the static bearer token, with an RS256 JWT
           and with an ES256 JWT of the issuer (its JWKS fetched once, at the first request,
           from a local server), and on a server with no token at all; microseconds per
           request, median of rounds. A client sends its token again and again, and a token
           that passed is remembered: ``jwt_*_new`` sends a token never seen before each
           time (the whole check: parse, signature, claims)
``http``   the same server on uvicorn in a subprocess, a client (this process) sending GETs
           on one keep-alive connection with each token; milliseconds per request, median

Ratios: JWT / static per request (info: what the check costs over a static token).

    python bench/bench_oauth.py            # ~30 s
    python bench/bench_oauth.py --quick    # ~10 s
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

STATIC = "bench-static-token-0123456789"
KINDS = ("none", "static", "jwt_rs256", "jwt_es256")
NEW = ("jwt_rs256_new", "jwt_es256_new")  # a token never seen before on every request: the full check


# --------------------------------------------------------------------------- keys and tokens
def make_keys() -> tuple[dict[str, Any], dict[str, Any]]:
    """(private keys by kid, the public JWKS document)."""
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from jwt.algorithms import ECAlgorithm, RSAAlgorithm

    private = {"r1": rsa.generate_private_key(public_exponent=65537, key_size=2048), "e1": ec.generate_private_key(ec.SECP256R1())}
    keys = []
    for kid, key in private.items():
        public = json.loads((RSAAlgorithm if kid == "r1" else ECAlgorithm).to_jwk(key.public_key()))
        keys.append({**public, "kid": kid, "use": "sig", "alg": "RS256" if kid == "r1" else "ES256"})
    return private, {"keys": keys}


def mint(private: dict[str, Any], issuer: str, audience: str, kid: str) -> str:
    import jwt

    now = int(time.time())
    claims = {"iss": issuer, "sub": "bench", "aud": audience, "scope": "onedoor", "iat": now, "exp": now + 3600,
              "jti": os.urandom(8).hex()}
    return jwt.encode(claims, private[kid], algorithm="RS256" if kid == "r1" else "ES256", headers={"kid": kid})


def serve_jwks(document: dict[str, Any]) -> tuple[str, Any]:
    """A JWKS on uvicorn in a thread: (its URL, the server)."""
    import socket

    import uvicorn

    body = json.dumps(document).encode()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True).start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}/jwks", server


# --------------------------------------------------------------------------- the app
class Door:
    name = "who"
    shapes = frozenset({"asgi"})

    def asgi_mount(self, ctx: Any) -> Any:
        from onedoor.composition import AsgiMount

        async def app(scope: Any, receive: Any, send: Any) -> None:
            body = ctx.principal_of(scope).encode()
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": body})

        return AsgiMount(app=app, prefix="/who")


def build(port: int, jwks_url: str, oauth: bool) -> Any:
    from onedoor.composition import ServeContext
    from onedoor.testing import scripted_kernel
    from onedoor_transport_http import HttpOptions
    from onedoor_transport_http.app import build_app

    extra = {"token": STATIC, "oauth_issuer": "http://127.0.0.1:1", "oauth_jwks_url": jwks_url,
             "oauth_scopes": ["onedoor"]} if oauth else {}
    options = HttpOptions(port=port, **extra)
    ctx = ServeContext(kernel=scripted_kernel(), door_names=["who"], transport_name="http")
    app, _ = build_app([Door()], ctx, options)
    return app


# --------------------------------------------------------------------------- in-process
async def call(app: Any, port: int, token: str | None) -> int:
    headers = [(b"host", f"127.0.0.1:{port}".encode())]
    if token:
        headers.append((b"authorization", b"Bearer " + token.encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/who", "raw_path": b"/who", "query_string": b"", "root_path": "", "headers": headers,
             "server": ("127.0.0.1", port), "client": ("127.0.0.1", 50000)}
    status = 0

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


async def in_process(tokens: dict[str, str | None], fresh: Any, jwks_url: str, rounds: int,
                     per_round: int) -> dict[str, float]:
    port = 8123
    apps = {"none": build(port, jwks_url, oauth=False)}
    secured = build(port, jwks_url, oauth=True)
    for kind in KINDS[1:]:
        apps[kind] = secured
    for kind in KINDS:  # warm up (the JWKS fetch happens here, once)
        assert await call(apps[kind], port, tokens[kind]) == 200, kind
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for _ in range(rounds):
        for kind in KINDS:
            app, token = apps[kind], tokens[kind]
            started = time.perf_counter()
            for _ in range(per_round):
                await call(app, port, token)
            times[kind].append((time.perf_counter() - started) / per_round * 1e6)
        for kind, kid in zip(NEW, ("r1", "e1")):
            batch = fresh(kid)
            started = time.perf_counter()
            for token in batch:
                await call(secured, port, token)
            times.setdefault(kind, []).append((time.perf_counter() - started) / len(batch) * 1e6)
    return {f"guard_{kind}_us": round(statistics.median(times[kind]), 2) for kind in (*KINDS, *NEW)}


# --------------------------------------------------------------------------- over HTTP
def serve(jwks_url: str) -> None:
    import socket

    import uvicorn

    sock = socket.socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as the transport's own listener (server.py)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = build(port, jwks_url, oauth=True)
    print(f"PORT {port}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)).run(sockets=[sock])


def over_http(base: str, tokens: dict[str, str | None], rounds: int, per_round: int) -> dict[str, float]:
    import httpx

    kinds = KINDS[1:]
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    with httpx.Client(base_url=base) as client:
        for kind in kinds:
            response = client.get("/who", headers={"authorization": f"Bearer {tokens[kind]}"})
            assert response.status_code == 200, (kind, response.text)
        for _ in range(rounds):
            for kind in kinds:
                headers = {"authorization": f"Bearer {tokens[kind]}"}
                started = time.perf_counter()
                for _ in range(per_round):
                    client.get("/who", headers=headers)
                times[kind].append((time.perf_counter() - started) / per_round * 1e3)
    return {f"http_{kind}_ms": round(statistics.median(times[kind]), 4) for kind in kinds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (under 15 s)")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    rounds, per_round = (5, 500) if args.quick else (15, 2000)
    private, document = make_keys()
    jwks_url, jwks_server = serve_jwks(document)
    issuer = "http://127.0.0.1:1"

    def tokens_for(base: str) -> dict[str, str | None]:
        return {"none": None, "static": STATIC, "jwt_rs256": mint(private, issuer, base + "/who", "r1"),
                "jwt_es256": mint(private, issuer, base + "/who", "e1")}

    def fresh(kid: str) -> list[str]:
        return [mint(private, issuer, "http://127.0.0.1:8123/who", kid) for _ in range(fresh_count)]

    fresh_count = 100 if args.quick else 300
    metrics = asyncio.run(in_process(tokens_for("http://127.0.0.1:8123"), fresh, jwks_url, rounds, per_round))
    proc = subprocess.Popen([sys.executable, __file__, "--serve", jwks_url], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise SystemExit(f"bench server did not start: {line!r}")
        base = f"http://127.0.0.1:{int(line.split()[1])}"
        metrics |= over_http(base, tokens_for(base), rounds, per_round // 4)
    finally:
        proc.terminate()
        proc.wait(15)
        jwks_server.should_exit = True
    ratios = {
        "guard_rs256_vs_static": {"value": round(metrics["guard_jwt_rs256_us"] / metrics["guard_static_us"], 3), "target": "info"},
        "guard_es256_vs_static": {"value": round(metrics["guard_jwt_es256_us"] / metrics["guard_static_us"], 3), "target": "info"},
        "guard_new_rs256_vs_static": {"value": round(metrics["guard_jwt_rs256_new_us"] / metrics["guard_static_us"], 3), "target": "info"},
        "guard_new_es256_vs_static": {"value": round(metrics["guard_jwt_es256_new_us"] / metrics["guard_static_us"], 3), "target": "info"},
        "http_rs256_vs_static": {"value": round(metrics["http_jwt_rs256_ms"] / metrics["http_static_ms"], 3), "target": "<= 1.5"},
        "http_es256_vs_static": {"value": round(metrics["http_jwt_es256_ms"] / metrics["http_static_ms"], 3), "target": "<= 1.5"},
    }
    print(json.dumps({"name": "oauth", "metrics": metrics, "ratios": ratios}))


if __name__ == "__main__":
    main()
