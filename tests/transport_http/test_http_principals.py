"""Tokens that name principals (``tokens_file``): each request reaches its door as the
principal of its token — header, page cookie or a page's ``?token=`` — on real uvicorn."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from onedoor.composition import AsgiMount, ServeContext
from onedoor.errors import OptionsError
from onedoor.testing import scripted_kernel
from onedoor_transport_http import HttpOptions
from onedoor_transport_http.principals import read_tokens_file
from onedoor_transport_http.testing import ThreadedServer

ALICE = "alice-token-0123456789abcdef"
ALICE_OLD = "alice-rotated-0123456789abcd"
BOB = "bob-token-0123456789abcdefgh"
LOCAL = "the-local-token-0123456789ab"


class WhoDoor:
    """Answers with the principal ``ServeContext.principal_of`` reads from the scope."""

    name = "who"
    shapes = frozenset({"asgi"})

    def asgi_mount(self, ctx):
        async def app(scope, receive, send):
            if scope["type"] != "http":
                return
            body = json.dumps({"principal": ctx.principal_of(scope), "query": scope["query_string"].decode()})
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body.encode()})

        return AsgiMount(app=app, prefix="/who")


@pytest.fixture
def tokens_file(tmp_path):
    path = tmp_path / "tokens"
    path.write_text(f"# who may call\nalice {ALICE}\nalice {ALICE_OLD}\n\nbob   {BOB}\n")
    return path


def serve(**options) -> ThreadedServer:
    ctx = ServeContext(kernel=scripted_kernel(), door_names=["who"], transport_name="http")
    return ThreadedServer([WhoDoor()], ctx, HttpOptions(port=0, **options))


def who(client: httpx.Client, token: str | None = None, **kw) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return client.get("/who", headers=headers, **kw)


def test_each_token_acts_as_its_principal(tokens_file):
    with serve(tokens_file=str(tokens_file), token=LOCAL) as server, httpx.Client(base_url=server.base_url) as client:
        assert who(client, ALICE).json()["principal"] == "alice"
        assert who(client, ALICE_OLD).json()["principal"] == "alice"
        assert who(client, BOB).json()["principal"] == "bob"
        assert who(client, LOCAL).json()["principal"] == "local"
        refused = who(client, BOB + "x")
        assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
        assert who(client).status_code == 401


def test_a_page_cookie_keeps_its_tokens_principal(tokens_file):
    with serve(tokens_file=str(tokens_file)) as server:
        for token, principal in ((ALICE, "alice"), (BOB, "bob")):
            with httpx.Client(base_url=server.base_url) as page:
                first = page.get("/who", params={"token": token, "x": "1"})
                assert first.status_code == 200 and first.json() == {"principal": principal, "query": "x=1"}
                assert "set-cookie" in first.headers
                # the cookie alone, as the page's own fetches send it
                again = page.get("/who", headers={"sec-fetch-site": "same-origin"})
                assert again.status_code == 200 and again.json()["principal"] == principal


def test_without_tokens_everyone_is_local():
    with serve() as server, httpx.Client(base_url=server.base_url) as client:
        assert who(client).json()["principal"] == "local"


@pytest.mark.parametrize("content, problem", [
    ("alice\n", "two words"),
    ("alice short\n", "at least 16"),
    ("al ice tok-0123456789abcdef\n", "two words"),
    ("bad/name tok-0123456789abcdef\n", "a principal is"),
    (f"alice {ALICE}\nbob {ALICE}\n", "already names principal 'alice'"),
    ("# nothing\n\n", "names no token"),
])
def test_a_bad_tokens_file_is_one_clear_error(tmp_path, content, problem):
    path = tmp_path / "tokens"
    path.write_text(content)
    with pytest.raises(OptionsError, match=problem) as caught:
        read_tokens_file(path)
    assert ALICE not in str(caught.value) and "0123456789" not in str(caught.value)  # tokens are never echoed


def test_serve_refuses_a_missing_tokens_file_before_starting(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", "--door", "rest", "--port", "0",
         "-o", f"tokens_file={tmp_path / 'absent'}"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode != 0
    assert "does not exist" in done.stderr and "Traceback" not in done.stderr


def test_a_public_bind_is_allowed_with_a_tokens_file(tokens_file):
    options = HttpOptions(host="0.0.0.0", port=0, tokens_file=str(tokens_file))
    assert options.requires_token and options.principals()[BOB] == "bob"
