"""What the two terminal commands share (`onedoor run` and the terminal door of `onedoor chat`):
Ctrl-C cancels the reply being written, and tool calls are shown shortened."""

from __future__ import annotations

import asyncio
import json
import signal
from contextlib import contextmanager
from typing import Any, Callable, Iterator


def shorten(value: Any, limit: int = 120) -> str:
    """A tool call's arguments or result as at most ``limit`` characters of text."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@contextmanager
def ctrl_c_cancels(cancel: Callable[[], Any]) -> Iterator[None]:
    """While inside, Ctrl-C calls ``cancel`` (on the running event loop) instead of raising
    KeyboardInterrupt. Where signal handlers cannot be installed (not the main thread,
    Windows), Ctrl-C keeps its usual effect."""
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, cancel)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):
        installed = False
    try:
        yield
    finally:
        if installed:
            try:
                loop.remove_signal_handler(signal.SIGINT)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
