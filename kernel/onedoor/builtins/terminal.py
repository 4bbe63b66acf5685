"""The terminal door: `onedoor run "…"` and the interactive `onedoor chat`.

``run_once`` streams one reply to stdout as it is written (tool calls and reasoning go
to stderr, so stdout is the reply alone), or with ``json_lines`` prints every core event
as one JSON object a line. The door object serves an interactive session over any
channel transport (stdio, or SLIM for a remote terminal) and keeps the history.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..composition import ChannelClosed, ServeContext
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

HELP = "Commands: /reset forgets the conversation, /exit (or Ctrl-D) leaves. Ctrl-C stops a reply."


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _install_sigint(callback: Any) -> bool:
    try:
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, callback)
        return True
    except (NotImplementedError, RuntimeError, ValueError):
        return False


def _remove_sigint() -> None:
    try:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
    except (NotImplementedError, RuntimeError, ValueError):
        pass


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
    installed = _install_sigint(run.cancel)
    code = 0
    try:
        async with run:
            async for event in run:
                if json_lines:
                    out.write(event_to_json(event) + "\n")
                    out.flush()
                    kind = type(event)
                    if kind is RunFailed:
                        code = 1
                    elif kind is RunFinished and event.stop_reason == STOP_CANCELLED:
                        code = 130
                    continue
                kind = type(event)
                if kind is TextDelta:
                    out.write(event.text)
                    out.flush()
                elif kind is ReasoningDelta:
                    if show_reasoning:
                        err.write(event.text)
                        err.flush()
                elif kind is ToolStarted:
                    err.write(f"[tool {event.name} {_short(event.arguments)}]\n")
                    err.flush()
                elif kind is ToolFinished:
                    mark = "failed" if event.is_error else "->"
                    err.write(f"[tool {event.name} {mark} {_short(event.result)}]\n")
                    err.flush()
                elif kind is RunFinished:
                    out.write("\n")
                    out.flush()
                    if event.stop_reason == STOP_CANCELLED:
                        print("[cancelled]", file=err)
                        code = 130
                elif kind is RunFailed:
                    out.write("\n")
                    out.flush()
                    print(f"onedoor: the run failed: {event.error}", file=err)
                    code = 1
    finally:
        if installed:
            _remove_sigint()
    return code


@dataclass
class TerminalOptions:
    show_tools: bool = field(default=True, metadata={"help": "show tool calls in the conversation"})
    show_reasoning: bool = field(default=False, metadata={"help": "show the agent's reasoning"})


class TerminalDoor:
    """Interactive chat over a channel: each incoming message is a line the user typed."""

    name = "terminal"
    shapes = frozenset({"channel"})
    framing = "text"
    Options = TerminalOptions

    async def serve_channel(self, channel: Any, ctx: ServeContext) -> None:
        options = ctx.options_for(self.name) or TerminalOptions()
        kernel = ctx.kernel
        history: list[Message] = []
        try:
            await channel.send(f"onedoor chat, backend {kernel.backend.name!r}. {HELP}\n> ")
            while True:
                line = await channel.recv()
                if line is None or line.strip() in ("/exit", "/quit"):
                    return
                text = line.strip()
                if not text:
                    await channel.send("> ")
                    continue
                if text == "/reset":
                    history.clear()
                    await channel.send("[conversation forgotten]\n> ")
                    continue
                if text == "/help":
                    await channel.send(HELP + "\n> ")
                    continue
                reply = await self._turn(channel, kernel, text, history, options)
                if reply is not None:
                    history.append(Message("user", text))
                    history.append(Message("assistant", reply))
                await channel.send("> ")
        except ChannelClosed:
            return

    async def _turn(self, channel: Any, kernel: Kernel, text: str, history: list[Message], options: TerminalOptions) -> str | None:
        try:
            run = kernel.run(text, history=history, door="terminal")
        except RunRefused as exc:
            await channel.send(f"[refused: {exc}]\n")
            return None
        installed = _install_sigint(run.cancel)
        try:
            async with run:
                async for event in run:
                    kind = type(event)
                    if kind is TextDelta:
                        await channel.send(event.text)
                    elif kind is ReasoningDelta and options.show_reasoning:
                        await channel.send(event.text)
                    elif kind is ToolStarted and options.show_tools:
                        await channel.send(f"[tool {event.name} {_short(event.arguments)}]\n")
                    elif kind is ToolFinished and options.show_tools:
                        await channel.send(f"[tool {event.name} -> {_short(event.result)}]\n")
                    elif kind is RunFinished:
                        note = " [cancelled]" if event.stop_reason == STOP_CANCELLED else ""
                        await channel.send(note + "\n")
                        return event.text
                    elif kind is RunFailed:
                        await channel.send(f"\n[error: {event.error}]\n")
                        return None
        finally:
            if installed:
                _remove_sigint()
        return None


door = TerminalDoor
