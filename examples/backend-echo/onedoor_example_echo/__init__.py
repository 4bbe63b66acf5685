"""An in-house backend: echoes the message back, shouting, one word at a time.

This is all a backend needs: a class (or function) whose instances have ``run``
yielding core events, and one entry point in ``onedoor.backends``. The kernel builds a
fresh instance for every run and calls ``cancel()`` when the run is cancelled.
"""

from __future__ import annotations

import asyncio
from typing import AsyncIterator

from onedoor import Event, RunFinished, RunStarted, TextDelta


class EchoAgent:
    def __init__(self) -> None:
        self.stopped = False

    def cancel(self) -> None:
        self.stopped = True

    async def run(self, message: str, *, history=None, context=None) -> AsyncIterator[Event]:
        run_id = context.run_id if context else "echo"
        yield RunStarted(run_id)
        words = message.upper().split()
        text = ""
        for index, word in enumerate(words):
            if self.stopped:
                return
            piece = word if index == 0 else " " + word
            text += piece
            yield TextDelta(piece)
            await asyncio.sleep(0)
        yield RunFinished(run_id, text)
