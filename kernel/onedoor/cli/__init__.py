"""The ``onedoor`` command: its entry point, its error policy and the fast path of `onedoor run`.

Every failure is one line on stderr and a non-zero exit, never a traceback: 2 for usage
and configuration mistakes (typer's own usage message for a mistyped command line), 1
for a failed run, 130 for a cancelled or interrupted one.

The commands themselves are a typer application (:mod:`onedoor.cli.app`). Building and
running it costs more than `onedoor run` may spend on start-up (typer 0.29 builds a
pydantic adapter for every parameter it converts), so a plain `onedoor run` command line
is read by :func:`~onedoor.cli.fast.parse_run_args`, without importing typer. It takes only what it
can read unambiguously with the same meaning as typer; anything else (``--help``, a
mistake, an unusual spelling) goes to the typer application, which answers as usual.
"""

from __future__ import annotations

import sys
from typing import Sequence

from ..errors import OnedoorError
from .fast import (
    ASK_FALLBACKS,
    RUN_FLAGS,
    RUN_VALUE_OPTIONS,
    RunRequest,
    parse_run_args,
    read_stdin_message,
    run_command,
    terminal_options,
)


def run_cli(args: Sequence[str]) -> int:
    """Run one command line (without the program name); the exit code."""
    try:
        request = parse_run_args(args)
        if request is not None:
            return run_command(request)
        from .app import invoke

        return invoke(args)
    except OnedoorError as exc:
        print(f"onedoor: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("onedoor: interrupted", file=sys.stderr)
        return 130


def main() -> None:
    """The ``onedoor`` script."""
    from .._foreign import warn_if_installed  # here too: the other `onedoor` may have replaced our __init__.py

    warn_if_installed()
    sys.exit(run_cli(sys.argv[1:]))


__all__ = [
    "ASK_FALLBACKS", "RUN_FLAGS", "RUN_VALUE_OPTIONS", "RunRequest", "main", "parse_run_args", "read_stdin_message",
    "run_cli", "run_command", "terminal_options",
]
