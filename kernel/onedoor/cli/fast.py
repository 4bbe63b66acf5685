"""`onedoor run`'s fast path: its command line read without typer, and the run itself
(see :mod:`onedoor.cli`)."""


from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import OnedoorError
from ..questions import POLICIES

# `onedoor run`'s options, as the typer command declares them (tests check both agree).
RUN_VALUE_OPTIONS = {
    "-b": "backend", "--backend": "backend", "-o": "option", "--option": "option", "--config": "config",
    "--ask-fallback": "ask_fallback", "--attach": "attach",
}
REPEATABLE = ("option", "attach")
ASK_FALLBACKS = POLICIES
RUN_FLAGS = {"--json": "json_lines", "--reasoning": "reasoning"}


@dataclass(frozen=True)
class RunRequest:
    """What `onedoor run` was asked for, however its command line was read."""

    message: str
    backend: str | None = None
    json_lines: bool = False
    reasoning: bool = False
    options: tuple[str, ...] = ()
    config: Path | None = None
    ask_fallback: str | None = None  # None: the terminal door's option (onedoor.toml, environment), else deny
    attach: tuple[str, ...] = ()  # files to send with the message


def parse_run_args(args: Sequence[str]) -> RunRequest | None:
    """Read ``run MESSAGE [OPTIONS]`` if every argument is plain; None hands the command
    line to the typer application.

    Plain means: the options of :data:`RUN_VALUE_OPTIONS` and :data:`RUN_FLAGS` spelled out
    (``-o x``, ``--option x``, ``--option=x``), option values that do not start with ``-``,
    ``--`` before a message that does, and exactly one message.
    """
    if not args or args[0] != "run":
        return None
    found: dict[str, object] = {}
    repeated: dict[str, list[str]] = {name: [] for name in REPEATABLE}
    positional: list[str] = []
    rest = list(args[1:])
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            positional.extend(rest)
            break
        if arg == "-" or not arg.startswith("-"):
            positional.append(arg)
            continue
        name, has_value, value = arg.partition("=")
        if name in RUN_FLAGS and not has_value:
            found[RUN_FLAGS[name]] = True
            continue
        if name not in RUN_VALUE_OPTIONS or (has_value and not name.startswith("--")):
            return None
        if not has_value:
            if not rest:
                return None
            value = rest.pop(0)
        if value.startswith("-"):
            return None
        field = RUN_VALUE_OPTIONS[name]
        if field in repeated:
            repeated[field].append(value)
        else:
            found[field] = value
    if len(positional) != 1:
        return None
    config = found.get("config")
    return RunRequest(
        message=positional[0],
        backend=found.get("backend"),  # type: ignore[arg-type]
        json_lines=bool(found.get("json_lines")),
        reasoning=bool(found.get("reasoning")),
        options=tuple(repeated["option"]),
        config=Path(config) if isinstance(config, str) else None,
        ask_fallback=found.get("ask_fallback"),  # type: ignore[arg-type]
        attach=tuple(repeated["attach"]),
    )


def read_stdin_message() -> str:
    """The message of `onedoor run -`: all of standard input."""
    stream = sys.stdin
    if stream is None:
        raise OnedoorError("cannot read the message: standard input is closed")
    try:
        return stream.read()
    except (OSError, ValueError) as exc:  # closed, unreadable, or not text in the locale's encoding
        raise OnedoorError(f"cannot read the message from standard input: {exc}") from None


def terminal_options(request: RunRequest, pairs: list[str]) -> object:
    """The terminal door's options for `onedoor run`: ``-o terminal.NAME=…`` pairs, then
    $ONEDOOR_TERMINAL_*, then ``[options.terminal]`` of onedoor.toml; ``--ask-fallback`` wins."""
    from ..builtins.terminal_door import TerminalOptions
    from ..errors import OptionsError
    from ..plugins.options import load_config_file, parse_options, split_cli_options

    if request.ask_fallback is not None and request.ask_fallback not in ASK_FALLBACKS:
        raise OptionsError(f"--ask-fallback must be one of {', '.join(ASK_FALLBACKS)}; got {request.ask_fallback!r}")
    table = load_config_file(request.config).get("options", {}).get("terminal", {})
    if not isinstance(table, dict):
        raise OptionsError("onedoor.toml: [options.terminal] must be a table")
    cli = split_cli_options(pairs).get("terminal", {})
    if request.ask_fallback is not None:
        cli["ask_fallback"] = request.ask_fallback
    return parse_options(TerminalOptions, "terminal", cli=cli, file=table)


def run_command(request: RunRequest) -> int:
    """`onedoor run`: one message, the reply streamed as it is written; the exit code."""
    import asyncio

    from ..builtins.run_once import run_once
    from ..plugins.serve import kernel_for

    pairs = list(request.options)
    mine = [p for p in pairs if p.partition("=")[0].strip().startswith("terminal.")]
    terminal = terminal_options(request, mine)
    message = read_stdin_message() if request.message == "-" else request.message
    kernel = kernel_for(request.backend, [p for p in pairs if p not in mine], request.config)
    if request.attach:  # files are read only when asked for: a plain run imports nothing more
        from ..builtins.attachments import message_with, read_attachment

        limit = kernel.limits.max_part_bytes
        message = message_with(message, [read_attachment(name, limit) for name in request.attach])
    return asyncio.run(run_once(
        kernel, message, json_lines=request.json_lines,
        show_reasoning=request.reasoning or terminal.show_reasoning,  # type: ignore[attr-defined]
        show_tools=terminal.show_tools,  # type: ignore[attr-defined]
        ask_fallback=terminal.ask_fallback,  # type: ignore[attr-defined]
    ))


__all__ = [
    "ASK_FALLBACKS", "REPEATABLE", "RUN_FLAGS", "RUN_VALUE_OPTIONS", "RunRequest", "parse_run_args", "read_stdin_message", "run_command",
    "terminal_options",
]
