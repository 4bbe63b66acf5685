"""The stdio transport with the terminal door (text framing) against the shared hostile corpus:
every hostile line is just a prompt; the process answers each, keeps serving, exits 0 at
the end of stdin, and prints no traceback. (The JSON-RPC doors over stdio run the same
corpus in tests/door_mcp and tests/door_acp.)"""

from __future__ import annotations

import subprocess
import sys

import pytest
from onedoor.testing import hostile

pytestmark = pytest.mark.timeout(180)
TERMINAL = [sys.executable, "-m", "onedoor", "serve", "--door", "terminal", "--transport", "stdio", "-o", "scripted.delay=0"]


def test_hostile_lines_are_prompts_to_the_terminal_door() -> None:
    cases = hostile.all_raw(jsonrpc=True, line_framed=True) + list(hostile.mutations({"message": "hi", "n": [1]}))
    stdin = b"".join(case.payload + b"\n" for case in cases) + b"hello after the storm\n"
    done = subprocess.run(
        TERMINAL,
        input=stdin, capture_output=True, timeout=150,
    )
    out = done.stdout.decode("utf-8")  # the output is UTF-8 whatever came in
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, err[-3000:]
    assert hostile.traceback_in(err) is None, err[-3000:]
    assert "You said: hello after the storm" in out
    turns = [case for case in cases if case.payload.strip()] + ["hello"]  # a blank line is no turn
    answered = out.count("You said: ") + out.count("[refused: ") + out.count("[error: ")
    assert answered == len(turns)  # every line got its turn


def test_a_line_that_is_not_utf8_reaches_the_terminal_door_as_replacement_characters() -> None:
    done = subprocess.run(
        TERMINAL,
        input=b"caf\xe9 \xff\n", capture_output=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert "You said: caf\ufffd \ufffd" in done.stdout.decode("utf-8")
