"""A fake OpenAI-compatible Chat Completions server for tests (real HTTP on 127.0.0.1).

    from onedoor_fake_model_server import fake_model_server

    with fake_model_server() as server:
        ...  # point any OpenAI client at server.base_url, model "fake-model"

See :mod:`onedoor_fake_model_server.script` for the directives that script a reply and
:mod:`onedoor_fake_model_server.usage` for the token counts it reports.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from .guard import loopback_only
from .script import new_call_id, plan_for
from .server import CONTEXT_LENGTH, MODEL, FakeModelServer, RecordedRequest
from .usage import MEDIA_TOKENS, message_tokens, usage_for


@contextmanager
def fake_model_server(*, delay: float = 0.0, models: tuple[str, ...] = (MODEL,)) -> Iterator[FakeModelServer]:
    """Start a server on a free port of 127.0.0.1 in a thread; stop it on exit (``models``: what
    ``GET /models`` lists; every model name is answered)."""
    server = FakeModelServer(delay=delay, models=models).start()
    try:
        yield server
    finally:
        server.stop()


__all__ = [
    "CONTEXT_LENGTH", "MEDIA_TOKENS", "MODEL", "FakeModelServer", "RecordedRequest", "fake_model_server", "loopback_only",
    "message_tokens", "new_call_id", "plan_for", "usage_for",
]
