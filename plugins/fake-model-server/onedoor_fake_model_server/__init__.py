"""A fake OpenAI-compatible Chat Completions server for tests (real HTTP on 127.0.0.1).

    from onedoor_fake_model_server import fake_model_server

    with fake_model_server() as server:
        ...  # point any OpenAI client at server.base_url, model "fake-model"

See :mod:`onedoor_fake_model_server.script` for the directives that script a reply.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from .guard import loopback_only
from .script import new_call_id, plan_for
from .server import CONTEXT_LENGTH, MODEL, FakeModelServer, RecordedRequest


@contextmanager
def fake_model_server(*, delay: float = 0.0) -> Iterator[FakeModelServer]:
    """Start a server on a free port of 127.0.0.1 in a thread; stop it on exit."""
    server = FakeModelServer(delay=delay).start()
    try:
        yield server
    finally:
        server.stop()


__all__ = ["CONTEXT_LENGTH", "MODEL", "FakeModelServer", "RecordedRequest", "fake_model_server", "loopback_only", "new_call_id", "plan_for"]
