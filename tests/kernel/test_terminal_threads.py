"""`onedoor chat --thread`: a stored conversation in the terminal, on a real pseudo-terminal
(stdin, stdout and stderr the terminal, as for a person), and with piped input; the
store is read back with `onedoor threads show --json`."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kernel_test_helpers import run_cli
from onedoor_test_support import wait_for

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX"),
]

WAIT = 60.0  # seconds; start-up imports take a while on a busy machine
NEW_THREAD = re.compile(r"onedoor: new thread (t-[0-9a-f]{24})")


class Pty:
    """`python -m onedoor ARGS` with a pseudo-terminal as stdin, stdout and stderr."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        import pty

        self.master, slave = pty.openpty()
        self.screen = ""
        self.seen = 0
        self.proc = subprocess.Popen([sys.executable, "-m", "onedoor", *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, close_fds=True)
        os.close(slave)

    def _pump(self, timeout: float) -> None:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # the child closed its end
                data = b""
            self.screen += data.decode("utf-8", "replace").replace("\r\n", "\n")

    def expect(self, pattern: str, what: str) -> re.Match[str]:
        """Wait until ``pattern`` (a regular expression) shows after what earlier expects saw."""

        def shown() -> re.Match[str] | None:
            exited = self.proc.poll() is not None
            self._pump(0.05 if exited else 0.2)
            match = re.compile(pattern).search(self.screen, self.seen)
            if match is None and exited:
                raise AssertionError(f"the command exited ({self.proc.returncode}) before {what}")
            return match

        try:
            match = wait_for(shown, what, timeout=WAIT, interval=0)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the terminal shows:\n{self.screen}") from None
        self.seen = match.end()
        return match

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self) -> int:
        def exited() -> bool:
            self._pump(0.2)
            return self.proc.poll() is not None

        try:
            wait_for(exited, "the command to exit", timeout=WAIT, interval=0)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the terminal shows:\n{self.screen}") from None
        self._pump(0.05)
        return self.proc.returncode

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self.master)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The children's environment: onedoor's data directory (the thread store) in tmp_path."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ONEDOOR_")}
    return {**clean, "ONEDOOR_DATA_DIR": str(tmp_path / "data"), "PYTHONUNBUFFERED": "1", "TERM": "dumb"}


@pytest.fixture
def terminal(env: dict[str, str]) -> Any:
    opened: list[Pty] = []

    def start(*args: str) -> Pty:
        term = Pty(env, *args)
        opened.append(term)
        return term

    yield start
    for term in opened:
        term.close()


def said(env: dict[str, str], thread_id: str) -> list[tuple[str, str]]:
    """The user messages and non-empty assistant messages stored in ``thread_id``."""
    shown = run_cli("threads", "show", thread_id, "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    messages = json.loads(shown.stdout)["messages"]
    return [(m["role"], m["content"]) for m in messages if m["role"] == "user" or (m["role"] == "assistant" and m["content"])]


def test_a_new_thread_goes_on_in_a_later_chat(terminal: Any, env: dict[str, str]) -> None:
    first = terminal("chat", "--thread", "new", "-o", "delay=0")
    thread_id = first.expect(NEW_THREAD.pattern, "the new thread's id").group(1)
    first.expect(rf"\[new thread {thread_id}\]\n> ", "the banner and the prompt")
    first.type("hello there\n")
    first.expect(r"You said: hello there \(2 words, turn 1\)\n> ", "the first reply")
    first.type("/exit\n")
    assert first.finish() == 0

    later = terminal("chat", "--thread", thread_id, "-o", "delay=0")
    later.expect(rf"\[thread {thread_id} 'hello there': \d+ earlier messages\]\n> ", "the thread's banner")
    later.type("and again\n")
    # the scripted backend counts the user turns it was given: the first chat's turn came along
    later.expect(r"You said: and again \(2 words, turn 2\)\n> ", "the reply that saw the earlier turn")
    later.type("/exit\n")
    assert later.finish() == 0
    assert NEW_THREAD.search(later.screen) is None

    assert said(env, thread_id) == [
        ("user", "hello there"), ("assistant", "You said: hello there (2 words, turn 1)"),
        ("user", "and again"), ("assistant", "You said: and again (2 words, turn 2)"),
    ]


def test_reset_on_a_thread_starts_another(terminal: Any, env: dict[str, str]) -> None:
    chat = terminal("chat", "--thread", "new", "-o", "delay=0", "-o", "terminal.show_tools=false")
    first_id = chat.expect(NEW_THREAD.pattern, "the new thread's id").group(1)
    chat.type("one\n")
    chat.expect(r"turn 1\)\n> ", "the first reply")
    chat.type("/reset\n")
    second_id = chat.expect(NEW_THREAD.pattern, "the next thread's id").group(1)
    chat.expect(rf"\[conversation forgotten; new thread {second_id}\]\n> ", "the reset note")
    chat.type("two\n")
    chat.expect(r"You said: two \(1 word, turn 1\)\n> ", "a reply on the fresh thread")
    chat.type("/exit\n")
    assert chat.finish() == 0
    assert second_id != first_id
    assert [c for r, c in said(env, first_id) if r == "user"] == ["one"]
    assert [c for r, c in said(env, second_id) if r == "user"] == ["two"]


@pytest.mark.parametrize("thread_id, code, message", [
    ("t-000000000000000000000000", 1, "no thread 't-000000000000000000000000'"),
    ("not an id", 2, "a thread id is 1-128"),
])
def test_a_thread_that_is_not_there_is_one_line(terminal: Any, thread_id: str, code: int, message: str) -> None:
    chat = terminal("chat", "--thread", thread_id)
    assert chat.finish() == code
    lines = [line for line in chat.screen.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("onedoor: error: ") and message in lines[0], chat.screen


def test_piped_chat_continues_a_thread_and_the_store_is_shared(env: dict[str, str], tmp_path: Path) -> None:
    """Without a terminal, and with the store's path given: the same thread, the same file."""
    db = tmp_path / "elsewhere.sqlite3"
    started = run_cli("chat", "--thread", "new", "-o", "delay=0", "-o", f"sqlite.path={db}",
                      input="first\n", env=env)
    assert started.returncode == 0, started.stderr
    match = NEW_THREAD.search(started.stderr)  # the id is told on stderr; stdout is the conversation
    assert match is not None and NEW_THREAD.search(started.stdout) is None, started.stderr
    thread_id = match.group(1)
    again = run_cli("chat", "--thread", thread_id, "-o", "delay=0", "-o", f"sqlite.path={db}",
                    input="second\n", env=env)
    assert again.returncode == 0 and "You said: second (1 word, turn 2)" in again.stdout, again.stderr
    listed = run_cli("threads", "ls", "--json", "-o", f"sqlite.path={db}", env=env)
    assert [(s["id"], s["title"]) for s in json.loads(listed.stdout)] == [(thread_id, "first")]
    assert json.loads(run_cli("threads", "ls", "--json", env=env).stdout) == []  # not the default file
