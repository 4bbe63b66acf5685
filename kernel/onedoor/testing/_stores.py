"""What the store conformance checks share (see :mod:`onedoor.testing.store_conformance`)."""

from __future__ import annotations

import contextlib
import inspect
import os
from typing import Any, AsyncIterator, Awaitable, Callable

from ..threads import ThreadError, ThreadStore

StoreFactory = Callable[..., Any]
Check = Callable[[StoreFactory], Awaitable[None]]

ROOMY = 2_000_000  # a size limit the checks do not reach
TIGHT = 1_000  # the size limit check_size_limit works with

def name(prefix: str) -> str:
    return f"{prefix}-{os.urandom(6).hex()}"


@contextlib.asynccontextmanager
async def opened(make_store: StoreFactory, max_thread_chars: int = ROOMY) -> AsyncIterator[Any]:
    store = make_store(max_thread_chars=max_thread_chars)
    if inspect.isawaitable(store):
        store = await store
    assert isinstance(store, ThreadStore), f"{type(store).__name__} does not have the ThreadStore methods"
    try:
        yield store
    finally:
        await store.close()


async def refused(reason: str, call: Awaitable[Any], what: str) -> ThreadError:
    try:
        got = await call
    except ThreadError as exc:
        assert exc.reason == reason, f"{what}: ThreadError {exc.reason!r} ({exc}), expected {reason!r}"
        assert str(exc).strip(), f"{what}: the ThreadError has no message"
        return exc
    raise AssertionError(f"{what}: expected ThreadError {reason!r}, got {got!r}")


__all__ = ["ROOMY", "TIGHT", "Check", "StoreFactory", "name", "opened", "refused"]
