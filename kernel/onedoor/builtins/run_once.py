"""`onedoor run "…"`: one message, the reply streamed to the terminal.

``run_once`` streams one reply to stdout as it is written (tool calls and reasoning go
to stderr, so stdout is the reply alone), or with ``json_lines`` prints every core event
as one JSON object a line. The interactive door is in :mod:`onedoor.builtins.terminal_door`.
"""

from __future__ import annotations

import sys
from typing import TextIO

from ..errors import RunRefused
from ..events import (
    STOP_CANCELLED,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    TextDelta,
    ToolFinished,
    ToolStarted,
    event_to_json,
)
from ..kernel import Kernel
from ..port import Message
from .console import ctrl_c_cancels, shorten


async def run_once(
    kernel: Kernel,
    message: str,
    *,
    history: list[Message] | None = None,
    json_lines: bool = False,
    show_reasoning: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """One run to the terminal. Exit code: 0 done, 1 failed, 130 cancelled."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        run = kernel.run(message, history=history, door="terminal")
    except RunRefused as exc:
        print(f"onedoor: {exc}", file=err)
        return 2
    code = 0
    with ctrl_c_cancels(run.cancel):
        async with run:
            async for event in run:
                if json_lines:
                    out.write(event_to_json(event) + "\n")
                    out.flush()
                    if isinstance(event, RunFailed):
                        code = 1
                    elif isinstance(event, RunFinished) and event.stop_reason == STOP_CANCELLED:
                        code = 130
                    continue
                if isinstance(event, TextDelta):
                    out.write(event.text)
                    out.flush()
                elif isinstance(event, ReasoningDelta):
                    if show_reasoning:
                        err.write(event.text)
                        err.flush()
                elif isinstance(event, ToolStarted):
                    err.write(f"[tool {event.name} {shorten(event.arguments)}]\n")
                    err.flush()
                elif isinstance(event, ToolFinished):
                    mark = "failed" if event.is_error else "->"
                    err.write(f"[tool {event.name} {mark} {shorten(event.result)}]\n")
                    err.flush()
                elif isinstance(event, RunFinished):
                    out.write("\n")
                    out.flush()
                    if event.stop_reason == STOP_CANCELLED:
                        print("[cancelled]", file=err)
                        code = 130
                elif isinstance(event, RunFailed):
                    out.write("\n")
                    out.flush()
                    print(f"onedoor: the run failed: {event.error}", file=err)
                    code = 1
    return code
