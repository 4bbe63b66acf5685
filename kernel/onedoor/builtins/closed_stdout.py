"""A reader that goes away (`onedoor run --json … | head -n 1`) is a normal end of a command.

When stdout closes, a command stops writing, cancels its run, and exits
:data:`CLOSED_STDOUT_EXIT` (0, as the reader took what it wanted) without a traceback.
:func:`silence_stdout` points file descriptor 1 at the null device, so whatever is still
buffered in ``sys.stdout`` (and Python's flush of it at exit) goes nowhere quietly instead
of raising BrokenPipeError once more.
"""

from __future__ import annotations

import errno
import os
from typing import IO, Any

CLOSED_STDOUT_EXIT = 0


def is_closed_pipe(exc: BaseException) -> bool:
    """True for the error a write to a pipe whose reader went away raises."""
    return isinstance(exc, BrokenPipeError) or (isinstance(exc, OSError) and exc.errno == errno.EPIPE)


def silence_stdout(stream: IO[Any] | None = None) -> None:
    """Send what is still written to ``stream``'s file descriptor (default: fd 1) to the null device."""
    try:
        fd = stream.fileno() if stream is not None else 1
    except (AttributeError, OSError, ValueError):  # not a file (a test's StringIO): nothing to do
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    try:
        os.dup2(devnull, fd)
    except OSError:
        pass
    finally:
        os.close(devnull)


def stdout_closed() -> int:
    """What a command does once stdout has closed: silence file descriptor 1; the exit code."""
    silence_stdout()
    return CLOSED_STDOUT_EXIT
