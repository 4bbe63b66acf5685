"""`onedoor run "…"`: one message, the reply streamed to the terminal.

``run_once`` streams one reply to stdout as it is written (tool calls, reasoning,
questions and the parts of a reply that are not text are named on stderr, so stdout is
the reply alone), or with ``json_lines`` prints every core event as one JSON object a line
(the run's usage is on its last). The message may carry files (``--attach``:
:mod:`onedoor.builtins.attachments`). The interactive door is in
:mod:`onedoor.builtins.terminal_door`.

Questions the run asks (tool approvals, free-form questions) are asked at the terminal
when a person is there (stdin and stderr are terminals; see
:func:`onedoor.builtins.console.ask_at_terminal`): the prompt on stderr, the answer from
stdin. Otherwise ``ask_fallback`` answers them: ``deny`` (the default), ``allow`` (tools
allowed once, questions declined) or ``fail`` (the run fails, exit 1, one line).

When stdout closes before the run ends (``onedoor run … | head -n 1``), the run is
cancelled and the command ends quietly, exit 0 (:mod:`onedoor.builtins.closed_stdout`).
"""

from __future__ import annotations

import sys
from typing import Any, Sequence, TextIO

from ..errors import RunRefused
from ..events import (
    STOP_CANCELLED,
    QuestionAnswered,
    QuestionAsked,
    ReasoningDelta,
    RunFailed,
    RunFinished,
    TextDelta,
    ToolFinished,
    ToolStarted,
    event_to_json,
    type_name,
)
from ..kernel import Kernel
from ..port import Message
from ..questions import LiveAsker, PolicyAsker
from .closed_stdout import CLOSED_STDOUT_EXIT, is_closed_pipe, silence_stdout
from .console import TerminalLines, ask_at_terminal, ctrl_c_cancels, shorten, stdin_is_a_terminal


def terminal_asker(err: TextIO, lines: TerminalLines | None = None) -> LiveAsker:
    """Ask each question at the terminal: prompts on ``err``, answers typed on stdin."""
    lines = lines or TerminalLines(0)

    async def say(text: str) -> None:
        err.write(text)
        err.flush()

    async def ask(question: Any) -> Any:
        lines.discard_typed_ahead()
        try:
            return await ask_at_terminal(question, say, lines.read_line)
        except BaseException:  # cancelled (Ctrl-C) while the person was typing
            await say("\n")
            raise

    return LiveAsker(ask)


class _Screen:
    """Writes one run's events: the reply on ``out``, the rest on ``err``; keeps the exit code."""

    def __init__(self, out: TextIO, err: TextIO, *, show_reasoning: bool, show_tools: bool,
                 interactive: bool, ask_fallback: str) -> None:
        self.out, self.err = out, err
        self.show_reasoning, self.show_tools = show_reasoning, show_tools
        self.interactive, self.ask_fallback = interactive, ask_fallback
        self.code = 0
        self.unanswerable: str | None = None  # the question a "fail" policy could not answer
        self.closed = False  # stdout's reader went away
        self.ended = False  # the run's terminal event came

    def write(self, text: str) -> None:
        """Write to ``out`` as it comes; once its reader is gone, nothing more."""
        if self.closed:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except OSError as exc:
            if not is_closed_pipe(exc):
                raise
            self.closed = True
            silence_stdout(self.out)

    def note(self, text: str) -> None:
        self.err.write(text)
        self.err.flush()

    def json_line(self, event: Any) -> None:
        self.write(event_to_json(event) + "\n")
        if isinstance(event, RunFailed):
            self.code, self.ended = 1, True
        elif isinstance(event, RunFinished):
            self.ended = True
            if event.stop_reason == STOP_CANCELLED:
                self.code = 130

    def show(self, event: Any) -> None:
        if isinstance(event, TextDelta):
            self.write(event.text)
        elif isinstance(event, ReasoningDelta):
            if self.show_reasoning:
                self.note(event.text)
        elif isinstance(event, ToolStarted):
            if self.show_tools:
                self.note(f"[tool {event.name} {shorten(event.arguments)}]\n")
        elif isinstance(event, ToolFinished):
            if self.show_tools and self.unanswerable is None:
                made = "".join(" " + part.describe() for part in event.parts)
                self.note(f"[tool {event.name} {'failed' if event.is_error else '->'} {shorten(event.result)}{made}]\n")
        elif type_name(event) == "reply_part":  # (its class is made on first use)
            self.note(f"[the reply holds {event.part.describe()}; `--json` shows it whole]\n")
        elif isinstance(event, (QuestionAsked, QuestionAnswered)):
            self.question(event)
        elif isinstance(event, (RunFinished, RunFailed)):
            self.end(event)

    def question(self, event: QuestionAsked | QuestionAnswered) -> None:
        if self.interactive:
            return  # the question was asked at the terminal
        if isinstance(event, QuestionAsked):
            if self.ask_fallback == "fail":
                self.unanswerable = event.question.prompt
        elif self.unanswerable is None:
            self.note(f"[question answered {event.answer.outcome}: stdin is not a terminal, "
                      f"ask_fallback is {self.ask_fallback}]\n")

    def end(self, event: RunFinished | RunFailed) -> None:
        self.ended = True
        self.write("\n")
        if isinstance(event, RunFinished):
            if event.stop_reason == STOP_CANCELLED:
                self.note("[cancelled]\n")
                self.code = 130
            return
        if self.unanswerable is not None:
            self.note(f"onedoor: the run needs an answer ({self.unanswerable}) but stdin is not a terminal "
                      "and ask_fallback is fail (see --ask-fallback)\n")
        else:
            self.note(f"onedoor: the run failed: {event.error}\n")
        self.code = 1


async def run_once(
    kernel: Kernel,
    message: str | Sequence[Any],
    *,
    history: list[Message] | None = None,
    json_lines: bool = False,
    show_reasoning: bool = False,
    show_tools: bool = True,
    ask_fallback: str = "deny",
    interactive: bool | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """One run to the terminal. Exit code: 0 done, 1 failed, 130 cancelled; 0 when
    ``out`` closes first (the run is cancelled). ``message``: text, or parts (attachments).

    ``interactive`` (default: stdin and stderr are terminals) asks the run's questions at
    the terminal; otherwise ``ask_fallback`` answers them.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    if interactive is None:
        interactive = stdin_is_a_terminal()
    asker = terminal_asker(err) if interactive else PolicyAsker(ask_fallback)
    try:
        run = kernel.run(message, history=history, door="terminal", asker=asker)
    except RunRefused as exc:
        print(f"onedoor: {exc}", file=err)
        return 2
    screen = _Screen(out, err, show_reasoning=show_reasoning, show_tools=show_tools,
                     interactive=interactive, ask_fallback=ask_fallback)
    write = screen.json_line if json_lines else screen.show
    with ctrl_c_cancels(run.cancel):
        async with run:
            async for event in run:
                write(event)
                if screen.closed and not screen.ended:
                    run.cancel()  # nobody reads the rest: the backend stops
                    break
    return CLOSED_STDOUT_EXIT if screen.closed and not screen.ended else screen.code
