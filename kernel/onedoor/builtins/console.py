"""What the two terminal commands share (`onedoor run` and the terminal door of `onedoor chat`):
Ctrl-C cancels the reply being written, tool calls are shown shortened, and a run's
questions are asked of the person at the terminal.

Asking (:func:`ask_at_terminal`) is one small dialogue over two callables, ``say(text)``
and ``read_line() -> str | None`` (None: end of input), so `onedoor run` (prompts on
stderr, answers from the terminal on stdin: :class:`TerminalLines`) and `onedoor chat`
(its channel) share it:

- an approval shows the tool and its arguments and reads ``y`` (allow once), ``n``
  (reject once), ``a`` (always allow), ``N`` (never: always reject); the words ``yes``,
  ``no``, ``always``, ``never`` work too. End of input (Ctrl-D) is "no". In a chat,
  "always" and "never" hold for that tool for the rest of the session
  (:class:`StandingAnswers`), as ACP keeps them for its session.
- an input question prompts for each field of its form, typed: numbers and whole numbers
  are parsed, booleans read y/n, enums are picked by number or by value; each field is
  checked against the schema and asked again when it does not fit. An empty line skips
  an optional field (or takes its default); ``/decline`` or end of input declines,
  ``/cancel`` cancels.

Ctrl-C while a question is open cancels the run (the question is answered no), as it
does while the reply is written.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator

if TYPE_CHECKING:
    from ..questions import Answer, Question

APPROVAL_WORDS = {"y": "allow_once", "yes": "allow_once", "n": "reject_once", "no": "reject_once",
                  "a": "allow_always", "always": "allow_always", "never": "reject_always"}
APPROVAL_CHOICES = "[y]es, [n]o, [a]lways, [N]ever"
MAX_TRIES = 20  # answers that do not fit, per question or field, before the question is declined


def shorten(value: Any, limit: int = 120) -> str:
    """A tool call's arguments or result as at most ``limit`` characters of text."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_CONTROL = {c: None for c in range(32) if c not in (9, 10)} | {127: None}
_CONTROL.update({c: None for c in range(0x80, 0xA0)})


def printable(text: str) -> str:
    """``text`` without control characters (terminal escape sequences) other than tab and
    newline: for text that came from elsewhere (a thread written through another door)."""
    return text.translate(_CONTROL)


def for_consent(value: Any, head: int = 3000, tail: int = 1000) -> str:
    """What a person is asked to allow, as safe text: control characters (terminal escape
    sequences) removed, and a very long text shown by its start and its end with the cut
    marked, so nothing dangerous can hide past the part shown."""
    text = printable(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    if len(text) <= head + tail:
        return text
    return f"{text[:head]}\n  … {len(text) - head - tail} characters not shown …\n{text[-tail:]}"


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


def stdin_is_a_terminal() -> bool:
    """True when a person can answer here: stdin and stderr are both terminals."""
    try:
        return os.isatty(0) and os.isatty(2)
    except (OSError, ValueError):
        return False


# -- asking --------------------------------------------------------------------------------
Say = Callable[[str], Awaitable[None]]
ReadLine = Callable[[], Awaitable["str | None"]]


def approval_outcome(line: str) -> str | None:
    """The outcome an answer to an approval names, or None. ``N`` (capital) is never."""
    word = line.strip()
    if word == "N":
        return "reject_always"
    return APPROVAL_WORDS.get(word.lower())


async def ask_at_terminal(question: "Question", say: Say, read_line: ReadLine) -> "Answer":
    """Ask ``question`` of the person at the terminal; their answer."""
    from ..questions import APPROVAL, Answer

    if question.kind == APPROVAL and question.tool is not None:
        tool = question.tool
        await say(f"\n[question] {for_consent(question.prompt)}\n  tool: {for_consent(tool.name)} {for_consent(tool.arguments)}\n")
        for _ in range(MAX_TRIES):
            await say(f"Allow? {APPROVAL_CHOICES}: ")
            line = await read_line()
            if line is None:
                await say("\n")
                return Answer(question.id, "reject_once", by="terminal")
            outcome = approval_outcome(line)
            if outcome is not None:
                return Answer(question.id, outcome, by="terminal")
            await say("  answer y, n, a or N\n")
        return Answer(question.id, "reject_once", by="terminal")
    return await _ask_form(question, say, read_line)


class StandingAnswers:
    """The "always" and "never" answers given in one chat session, by tool name: a later
    approval of the same tool is answered by them without asking."""

    def __init__(self) -> None:
        self.by_tool: dict[str, str] = {}

    def answer(self, question: "Question") -> "Answer | None":
        """The standing answer to ``question``, or None (ask the person)."""
        from ..questions import APPROVAL, Answer

        if question.kind != APPROVAL or question.tool is None or question.tool.name not in self.by_tool:
            return None
        return Answer(question.id, self.by_tool[question.tool.name], by="terminal", how="policy")

    def keep(self, question: "Question", answer: "Answer") -> None:
        """Remember ``answer`` if it is an "always" or "never" to an approval."""
        if question.tool is not None and answer.outcome in ("allow_always", "reject_always"):
            self.by_tool[question.tool.name] = answer.outcome

    @staticmethod
    def note(question: "Question", answer: "Answer") -> str:
        """The line that tells the person a standing answer was used."""
        name = for_consent(question.tool.name) if question.tool is not None else "?"
        if answer.outcome == "allow_always":
            return f"\n[tool {name} allowed: you answered 'always' earlier in this chat]\n"
        return f"\n[tool {name} rejected: you answered 'never' earlier in this chat]\n"


async def _ask_form(question: "Question", say: Say, read_line: ReadLine) -> "Answer":
    from ..questions import Answer

    schema = question.schema or {}
    props: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    await say(f"\n[question] {for_consent(question.prompt)}\n  (one line per field; /decline to not answer)\n")
    value: dict[str, Any] = {}
    for name, prop in props.items():
        outcome, item = await _ask_field(name, prop, name in required, say, read_line)
        if outcome != "ok":
            return Answer(question.id, outcome, by="terminal")
        if item is not _SKIP:
            value[name] = item
    return Answer(question.id, "accept", value, by="terminal")


_SKIP = object()


async def _ask_field(name: str, prop: dict[str, Any], required: bool, say: Say, read_line: ReadLine) -> tuple[str, Any]:
    """("ok", the field's value or _SKIP), or ("decline" | "cancel", None)."""
    from ..questions import form_problem

    label = prop.get("title") or name
    enum = prop.get("enum") if prop.get("type") == "string" else None
    if prop.get("description"):
        await say(f"  {prop['description']}\n")
    if enum:
        await say("".join(f"    {i}) {choice}\n" for i, choice in enumerate(enum, 1)))
    hint = _type_hint(prop, enum)
    default = f", default {json.dumps(prop['default'])}" if "default" in prop else ""
    needed = "required" if required else "optional"
    for _ in range(MAX_TRIES):
        await say(f"  {label} ({hint}, {needed}{default}): ")
        line = await read_line()
        if line is None or line.strip() == "/decline":
            if line is None:
                await say("\n")
            return "decline", None
        if line.strip() == "/cancel":
            return "cancel", None
        text = line.strip()
        if not text:
            if "default" in prop:
                return "ok", prop["default"]
            if not required:
                return "ok", _SKIP
            await say("    this field is required (/decline to not answer)\n")
            continue
        item, problem = _convert(text, prop, enum)
        if not problem:
            problem = form_problem({"properties": {name: prop}}, {name: item}).removeprefix(f"{name!r} ")
        if not problem:
            return "ok", item
        await say(f"    {problem}\n")
    return "decline", None


def _type_hint(prop: dict[str, Any], enum: list[str] | None) -> str:
    if enum:
        return f"choose 1-{len(enum)}"
    kind = prop.get("type")
    if kind == "boolean":
        return "y/n"
    if kind == "integer":
        return "whole number"
    if kind == "number":
        return "number"
    return f"text, {prop['format']}" if prop.get("format") else "text"


def _convert(text: str, prop: dict[str, Any], enum: list[str] | None) -> tuple[Any, str]:
    """The typed value of what was typed, and '' (or None and why it cannot be)."""
    kind = prop.get("type")
    if enum:
        if text.isdigit() and 1 <= int(text) <= len(enum):
            return enum[int(text) - 1], ""
        return (text, "") if text in enum else (None, f"choose a number from 1 to {len(enum)}")
    if kind == "boolean":
        word = text.lower()
        if word in ("y", "yes", "true", "1"):
            return True, ""
        if word in ("n", "no", "false", "0"):
            return False, ""
        return None, "answer y or n"
    if kind == "integer":
        try:
            return int(text), ""
        except ValueError:
            return None, "must be a whole number"
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return None, "must be a number"
        if number != number or number in (float("inf"), float("-inf")):
            return None, "must be a finite number"
        return (int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number), ""
    return text, ""


class TerminalLines:
    """Lines typed at the terminal on a file descriptor (stdin), read on the event loop
    (``loop.add_reader``; a daemon thread where that is not available), so a cancelled
    question stops waiting at once and leaves nothing behind."""

    def __init__(self, fd: int = 0) -> None:
        self.fd = fd
        self.buffer = b""
        self.eof = False

    def discard_typed_ahead(self) -> None:
        """Forget what was typed before the question (a stray 'y' must not answer it).
        On a terminal, an earlier Ctrl-D answered its own question only."""
        self.buffer = b""
        try:
            import termios

            termios.tcflush(self.fd, termios.TCIFLUSH)
            self.eof = False  # the flush worked: a terminal, where more can be typed
        except (ImportError, OSError, ValueError):
            pass

    async def read_line(self) -> str | None:
        while b"\n" not in self.buffer and not self.eof:
            chunk = await self._read()
            if chunk:
                self.buffer += chunk
            else:
                self.eof = True
        if not self.buffer and self.eof:
            return None
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("utf-8", "replace").rstrip("\r")

    async def _read(self) -> bytes:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        try:
            loop.add_reader(self.fd, _settle, ready, None)
        except (NotImplementedError, RuntimeError, ValueError, OSError):
            return await self._read_in_thread(loop)
        try:
            await ready
        finally:
            loop.remove_reader(self.fd)
        try:
            return os.read(self.fd, 4096)
        except BlockingIOError:
            return await self._read()
        except OSError:
            return b""

    async def _read_in_thread(self, loop: asyncio.AbstractEventLoop) -> bytes:
        import threading

        done: asyncio.Future[bytes] = loop.create_future()

        def read() -> None:
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                data = b""
            try:
                loop.call_soon_threadsafe(_settle, done, data)
            except RuntimeError:  # the loop has closed: nobody waits for this line any more
                pass

        threading.Thread(target=read, name="onedoor-terminal-answer", daemon=True).start()
        return await done


def _settle(future: "asyncio.Future[Any]", value: Any) -> None:
    """Give ``future`` its result unless it has one already."""
    if not future.done():
        future.set_result(value)
