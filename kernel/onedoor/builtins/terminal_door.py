"""The terminal door: an interactive chat over any channel transport (`onedoor chat`).

Each incoming message is a line the user typed; the reply streams back as it is
written. Over stdio that is this terminal; over SLIM, a remote one. History is kept for
the session; /reset forgets it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import RunRefused
from ..events import STOP_CANCELLED, ReasoningDelta, RunFailed, RunFinished, TextDelta, ToolFinished, ToolStarted
from ..kernel import Kernel
from ..port import Message
from .console import ctrl_c_cancels, shorten

if TYPE_CHECKING:
    from ..composition import ServeContext

HELP = "Commands: /reset forgets the conversation, /exit (or Ctrl-D) leaves. Ctrl-C stops a reply."


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

    async def serve_channel(self, channel: Any, ctx: "ServeContext") -> None:
        from ..composition import ChannelClosed

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
        with ctrl_c_cancels(run.cancel):
            async with run:
                async for event in run:
                    if isinstance(event, TextDelta):
                        await channel.send(event.text)
                    elif isinstance(event, ReasoningDelta) and options.show_reasoning:
                        await channel.send(event.text)
                    elif isinstance(event, ToolStarted) and options.show_tools:
                        await channel.send(f"[tool {event.name} {shorten(event.arguments)}]\n")
                    elif isinstance(event, ToolFinished) and options.show_tools:
                        await channel.send(f"[tool {event.name} -> {shorten(event.result)}]\n")
                    elif isinstance(event, RunFinished):
                        note = " [cancelled]" if event.stop_reason == STOP_CANCELLED else ""
                        await channel.send(note + "\n")
                        return event.text
                    elif isinstance(event, RunFailed):
                        await channel.send(f"\n[error: {event.error}]\n")
                        return None
        return None


door = TerminalDoor
