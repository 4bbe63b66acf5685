"""The terminal door: an interactive chat over any channel transport (`onedoor chat`).

Each incoming message is a line the user typed; the reply streams back as it is
written. Over stdio that is this terminal; over SLIM, a remote one. History is kept for
the session; /reset forgets it. ``/attach FILE`` sends a file with the next message
(:mod:`onedoor.builtins.attachments`), in a local terminal only: over any other channel the
file would be read from the server's disk. Parts of a reply that are not text are named.

With the option ``thread`` (``onedoor chat --thread ID``) the conversation is a stored
thread of the kernel's thread store, owned by the local user (principal ``local``): its
earlier turns, from any door, are the history, and each turn is appended to it; ``new``
starts a thread and tells its id (on stderr over stdio). /reset then starts another
thread. An unknown thread ends the session with :class:`~onedoor.threads.ThreadError`.

A run's questions (tool approvals, free-form questions) are asked in the conversation:
the question is written to the channel and the next lines typed answer it
(:func:`onedoor.builtins.console.ask_at_terminal`). Over stdio that needs a person at
the terminal (stdin and stderr are terminals); with piped input, and always if the
option says so, ``ask_fallback`` answers instead: ``deny`` (the default), ``allow``
(tools allowed once, questions declined) or ``fail`` (the run fails). A remote terminal
(any other channel) is a person typing lines, so it is asked. An answer "always" or
"never" to a tool's approval holds for that tool for the rest of the chat session.

Ctrl-D at a question answers it no (declines a form) and the chat goes on; at the idle
prompt it ends the chat, as Ctrl-C there does, and the prompt's line is ended first so
the shell's prompt starts on a line of its own.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import OnedoorError, RunRefused
from ..events import (
    STOP_CANCELLED,
    QuestionAnswered,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    TextDelta,
    ToolFinished,
    ToolStarted,
    type_name,
)
from ..kernel import Kernel
from ..port import Message
from ..questions import AskFallback, LiveAsker, PolicyAsker, check_policy
from .console import StandingAnswers, ask_at_terminal, ctrl_c_cancels, shorten, stdin_is_a_terminal


def describe(part: Any) -> str:
    from .attachments import describe as named

    return named(part)

if TYPE_CHECKING:
    from ..composition import ServeContext
    from .terminal_threads import TerminalThread

HELP = ("Commands: /attach FILE sends a file with your next message, /reset forgets the conversation, "
        "/exit (or Ctrl-D) leaves. Ctrl-C stops a reply.")


async def _read_at_prompt(channel: Any) -> str | None:
    """The next line typed at the idle prompt; None when the chat ends there (end of
    input, Ctrl-D), after ending the prompt's line on this terminal (Ctrl-C too)."""
    local = getattr(channel, "peer", "") == "stdio"
    try:
        line = await channel.recv()
    except asyncio.CancelledError:  # Ctrl-C at the prompt (asyncio cancels the chat)
        if local:
            await channel.send("\n")
        raise
    if line is None and local:
        await channel.send("\n")
    return line


@dataclass
class TerminalOptions:
    show_tools: bool = field(default=True, metadata={"help": "show tool calls in the conversation"})
    show_reasoning: bool = field(default=False, metadata={"help": "show the agent's reasoning"})
    ask_fallback: AskFallback = field(
        default="deny",
        metadata={"help": "the agent's questions when nobody can answer at a terminal (stdin not a TTY): "
                          "deny (approvals rejected, questions declined), allow (approvals allowed once, "
                          "questions declined) or fail (the run fails); also --ask-fallback"},
    )

    thread: str = field(
        default="",
        metadata={"help": "continue this stored thread ('new' starts one; also `onedoor chat --thread`)"},
    )

    def __post_init__(self) -> None:
        check_policy(self.ask_fallback)


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
        attached: list[Any] = []  # parts for the next message (/attach)
        standing = StandingAnswers()  # "always" / "never" answers, for this session
        stored = None
        if options.thread:  # `onedoor run` imports this module too: the thread code loads only when used
            from .terminal_threads import TerminalThread

            stored = await TerminalThread.open(kernel.store, options.thread, channel)
        try:
            await channel.send(f"onedoor chat, backend {kernel.backend.name!r}. {HELP}\n")
            if stored is not None:
                await channel.send(stored.banner())
            await channel.send("> ")
            while True:
                line = await _read_at_prompt(channel)
                if line is None or line.strip() in ("/exit", "/quit"):
                    return
                text = line.strip()
                if not text:
                    await channel.send("> ")
                    continue
                if text == "/attach" or text.startswith("/attach "):
                    await channel.send(self._attach(channel, kernel, text[len("/attach"):].strip(), attached) + "\n> ")
                    continue
                if text == "/reset":
                    history.clear()
                    attached.clear()
                    note = await stored.restart() if stored is not None else ""
                    await channel.send(f"[conversation forgotten{note}]\n> ")
                    continue
                if text == "/help":
                    await channel.send(HELP + "\n> ")
                    continue
                message, sent = _with_attached(text, attached)
                reply = await self._turn(channel, kernel, message, history, options, stored, standing)
                if reply is not None and stored is None:
                    history.append(sent)
                    history.append(Message("assistant", reply))
                await channel.send("> ")
        except ChannelClosed:
            return

    @staticmethod
    def _attach(channel: Any, kernel: Kernel, name: str, attached: list[Any]) -> str:
        """/attach FILE: the file goes with the next message; the line that says so."""
        if getattr(channel, "peer", "") != "stdio":  # a remote terminal would read this server's files
            return "[/attach works in a local terminal only: the file would be read on the server's disk]"
        if not name:
            listed = ", ".join(describe(p) for p in attached) or "nothing yet"
            return f"[usage: /attach FILE; attached for your next message: {listed}]"
        from .attachments import read_attachment

        try:
            part = read_attachment(name, kernel.limits.max_part_bytes)
        except OnedoorError as exc:
            return f"[{exc}]"
        attached.append(part)
        return f"[attached {describe(part)}: it goes with your next message]"

    @staticmethod
    def _asker(channel: Any, options: TerminalOptions, standing: StandingAnswers) -> Any:
        """Ask over the channel when a person is at the other end (unless an earlier
        "always" or "never" answers); else the fallback policy."""
        person = stdin_is_a_terminal() if getattr(channel, "peer", "") == "stdio" else True
        if not person:
            return PolicyAsker(options.ask_fallback)

        async def ask(question: Any) -> Any:
            async def read_line() -> str | None:
                line = await channel.recv()
                return None if line is None else str(line)

            answer = standing.answer(question)
            if answer is not None:
                await channel.send(standing.note(question, answer))
                return answer
            answer = await ask_at_terminal(question, channel.send, read_line)
            standing.keep(question, answer)
            return answer

        return LiveAsker(ask)

    async def _turn(
        self, channel: Any, kernel: Kernel, text: Any, history: list[Message], options: TerminalOptions,
        stored: "TerminalThread | None" = None, standing: StandingAnswers | None = None,
    ) -> str | None:
        asker = self._asker(channel, options, standing if standing is not None else StandingAnswers())
        try:
            if stored is None:
                run = kernel.run(text, history=history, door="terminal", asker=asker)
            else:
                thread = await stored.current()
                if thread is None:
                    await channel.send(f"[{stored.gone()}]\n")
                    return None
                run = kernel.run(text, thread=thread, principal=stored.principal, door="terminal", asker=asker)
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
                        made = "".join(" " + describe(part) for part in event.parts)
                        await channel.send(f"[tool {event.name} -> {shorten(event.result)}{made}]\n")
                    elif type_name(event) == "reply_part":  # (its class is made on first use)
                        await channel.send(f"\n{describe(event.part)}\n")  # type: ignore[union-attr]
                    elif isinstance(event, QuestionAnswered) and isinstance(asker, PolicyAsker):
                        await channel.send(f"[question answered {event.answer.outcome}: nobody at a terminal, "
                                           f"ask_fallback is {options.ask_fallback}]\n")
                    elif isinstance(event, RunFinished):
                        note = " [cancelled]" if event.stop_reason == STOP_CANCELLED else ""
                        await channel.send(note + "\n")
                        return event.text
                    elif isinstance(event, RunFailed):
                        await channel.send(f"\n[error: {event.error}]\n")
                        return None
        return None


def _with_attached(text: str, attached: list[Any]) -> tuple[Any, Message]:
    """The message to run (text, or text and the attached files, which go with it and no
    further) and the user's message as the session's history keeps it."""
    if not attached:
        return text, Message("user", text)
    from ..content import text_of
    from .attachments import message_with

    parts = message_with(text, attached)
    attached.clear()
    return parts, Message("user", text_of(parts), parts=tuple(parts))


door = TerminalDoor
