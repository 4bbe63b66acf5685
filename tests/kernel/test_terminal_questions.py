"""Questions at the terminal (issue 15): `onedoor run` and `onedoor chat` ask on a TTY, and
answer by ``--ask-fallback`` / the terminal door's ``ask_fallback`` when stdin is not one.

The TTY tests run the real command on a pseudo-terminal (stdlib ``pty``): the child gets
the terminal as its controlling terminal (so Ctrl-C, byte 0x03 typed on the master, is a
SIGINT from the line discipline, as for a person) on stdin and stderr, while stdout stays
a pipe, to check it carries the reply alone. The scripted backend asks: ``/ask NAME JSON``
(an approval) and ``/question …`` (a free-form question).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest
from onedoor_test_support import wait_for

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX"),
]

ASK_RM = '/ask rm {"path": "x"}'
WAIT = 60.0  # seconds; the machine may be busy, and start-up imports take a while there
# Make stdin (fd 0, the terminal) the child's controlling terminal, then run the command.
LAUNCH = "import fcntl, os, sys, termios; os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execv(sys.argv[1], sys.argv[1:])"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONEDOOR_")}
    env["PYTHONUNBUFFERED"] = "1"
    env["TERM"] = "dumb"
    return env


class Terminal:
    """A command on a pseudo-terminal: ``expect`` what it writes there, ``type`` at it."""

    def __init__(self, *args: str, stdout_on_terminal: bool = False, cwd: Path | None = None) -> None:
        import pty

        self.master, slave = pty.openpty()
        self.screen = ""
        self.seen = 0  # how much of the screen earlier expects consumed
        stdout = slave if stdout_on_terminal else subprocess.PIPE
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, sys.executable, "-m", "onedoor", *args],
            stdin=slave, stdout=stdout, stderr=slave, env=_env(), cwd=cwd, close_fds=True,
        )
        os.close(slave)

    def _pump(self, timeout: float) -> None:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # the child closed its end of the terminal
                data = b""
            self.screen += data.decode("utf-8", "replace").replace("\r\n", "\n")

    def expect(self, text: str, what: str) -> None:
        """Wait until ``text`` appears on the terminal after what was already seen."""

        def shown() -> bool:
            exited = self.proc.poll() is not None
            self._pump(0.05 if exited else 0.2)
            if text in self.screen[self.seen:]:
                return True
            if exited:
                raise AssertionError(f"the command exited ({self.proc.returncode}) before {what}:\n{self.screen}")
            return False

        try:
            wait_for(shown, what, timeout=WAIT, interval=0)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the terminal shows:\n{self.screen}") from None
        self.seen = self.screen.index(text, self.seen) + len(text)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self) -> tuple[int, str]:
        """Wait for the command to exit; (exit code, its stdout if piped)."""
        def exited() -> bool:
            self._pump(0.2)  # keep reading the terminal, so the command never blocks writing to it
            return self.proc.poll() is not None

        try:
            wait_for(exited, "the command to exit", timeout=WAIT, interval=0)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the terminal shows:\n{self.screen}") from None
        self._pump(0.05)
        out = self.proc.stdout.read().decode() if self.proc.stdout is not None else ""
        return self.proc.returncode, out

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        os.close(self.master)


@pytest.fixture
def terminal():
    opened: list[Terminal] = []

    def start(*args: str, **kwargs) -> Terminal:
        term = Terminal(*args, **kwargs)
        opened.append(term)
        return term

    yield start
    for term in opened:
        term.close()


# -- onedoor run on a terminal ------------------------------------------------------------


@pytest.mark.parametrize(
    "typed, reply",
    [
        ("y", "Approved (allow_once): ran rm"),
        ("n", "Not approved (reject_once): did not run rm"),
        ("a", "Approved (allow_always): ran rm"),
        ("N", "Not approved (reject_always): did not run rm"),
        ("yes", "Approved (allow_once): ran rm"),
        ("never", "Not approved (reject_always): did not run rm"),
    ],
)
def test_run_asks_approval_on_the_terminal(terminal, typed: str, reply: str) -> None:
    term = terminal("run", ASK_RM)
    term.expect('tool: rm {"path": "x"}', "the tool and its arguments")
    term.expect("Allow? [y]es, [n]o, [a]lways, [N]ever: ", "the approval prompt")
    term.type(typed + "\n")
    code, out = term.finish()
    assert code == 0, term.screen
    assert out == reply + "\n"  # stdout carries the reply alone: prompts went to the terminal (stderr)
    assert "Traceback" not in term.screen


def test_run_asks_again_after_an_answer_it_does_not_know(terminal) -> None:
    term = terminal("run", "--backend", "scripted", "-o", "mode=async", ASK_RM)
    term.expect("Allow? ", "the approval prompt")
    term.type("maybe\n")
    term.expect("answer y, n, a or N", "the hint after an unknown answer")
    term.expect("Allow? ", "the prompt again")
    term.type("y\n")
    code, out = term.finish()
    assert code == 0 and out == "Approved (allow_once): ran rm\n", term.screen


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_ctrl_c_while_asked_cancels_the_run(terminal, mode: str) -> None:
    term = terminal("run", "-o", f"mode={mode}", ASK_RM)
    term.expect("Allow? ", "the approval prompt")
    term.type("\x03")  # Ctrl-C: the terminal sends SIGINT to the command
    code, out = term.finish()
    assert code == 130, term.screen
    assert "[cancelled]" in term.screen and "Traceback" not in term.screen
    assert out.strip() == ""


def test_run_asks_a_free_form_question(terminal) -> None:
    term = terminal("run", "/question Which branch?")
    term.expect("[question] Which branch?", "the question")
    term.expect("answer (text, required): ", "the prompt for the answer field")
    term.type("\n")  # an empty answer to a required field is asked again
    term.expect("this field is required", "the required-field hint")
    term.expect("answer (text, required): ", "the prompt again")
    term.type("main\n")
    code, out = term.finish()
    assert code == 0, term.screen
    assert out == 'You answered {"answer": "main"}\n'


def test_run_asks_each_field_of_a_typed_form(terminal) -> None:
    schema = {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 1, "description": "How many replicas"},
            "env": {"type": "string", "enum": ["dev", "prod"]},
            "confirm": {"type": "boolean"},
            "ratio": {"type": "number"},
            "note": {"type": "string"},
        },
        "required": ["count", "env", "confirm"],
    }
    term = terminal("run", "/question " + json.dumps({"prompt": "Deploy?", "schema": schema}))
    term.expect("How many replicas", "the field's description")
    term.expect("count (whole number, required): ", "the integer field")
    term.type("two\n")
    term.expect("must be a whole number", "the integer check")
    term.type("0\n")
    term.expect("out of range", "the minimum check")
    term.type("3\n")
    term.expect("2) prod", "the enum's choices")
    term.expect("env (choose 1-2, required): ", "the enum field")
    term.type("7\n")
    term.expect("choose a number from 1 to 2", "the enum check")
    term.type("2\n")
    term.expect("confirm (y/n, required): ", "the boolean field")
    term.type("y\n")
    term.expect("ratio (number, optional): ", "the number field")
    term.type("0.5\n")
    term.expect("note (text, optional): ", "the optional text field")
    term.type("\n")  # skipped
    code, out = term.finish()
    assert code == 0, term.screen
    assert out == 'You answered {"confirm": true, "count": 3, "env": "prod", "ratio": 0.5}\n'


def test_run_question_declined_on_the_terminal(terminal) -> None:
    term = terminal("run", "/question Which branch?")
    term.expect("answer (text, required): ", "the prompt for the answer field")
    term.type("/decline\n")
    code, out = term.finish()
    assert code == 0 and out == "No answer (decline)\n", term.screen


# -- onedoor chat on a terminal --------------------------------------------------------------


def test_chat_asks_in_the_conversation_and_goes_on(terminal) -> None:
    term = terminal("chat", stdout_on_terminal=True)
    term.expect("> ", "the chat prompt")
    term.type(ASK_RM + "\n")
    term.expect("Allow? [y]es, [n]o, [a]lways, [N]ever: ", "the approval prompt in the chat")
    term.type("a\n")
    term.expect("Approved (allow_always): ran rm", "the reply after the approval")
    term.expect("> ", "the chat prompt after the reply")
    term.type("/question Which branch?\n")
    term.expect("answer (text, required): ", "the question in the chat")
    term.type("dev\n")
    term.expect('You answered {"answer": "dev"}', "the reply with the answer")
    term.expect("> ", "the chat prompt")
    term.type("hello\n")
    term.expect("You said: hello", "an ordinary turn afterwards")
    term.type("/exit\n")
    code, _ = term.finish()
    assert code == 0 and "Traceback" not in term.screen, term.screen


def test_chat_ctrl_c_while_asked_cancels_the_reply_only(terminal) -> None:
    term = terminal("chat", stdout_on_terminal=True)
    term.expect("> ", "the chat prompt")
    term.type(ASK_RM + "\n")
    term.expect("Allow? ", "the approval prompt in the chat")
    term.type("\x03")
    term.expect("[cancelled]", "the cancelled turn")
    term.expect("> ", "the chat prompt after the cancel")
    term.type("hello\n")
    term.expect("You said: hello", "the next turn")
    term.type("/exit\n")
    code, _ = term.finish()
    assert code == 0 and "Traceback" not in term.screen, term.screen


def test_chat_always_and_never_hold_for_the_session(terminal) -> None:
    term = terminal("chat", stdout_on_terminal=True)
    term.expect("> ", "the chat prompt")
    term.type(ASK_RM + "\n")
    term.expect("Allow? ", "the approval prompt")
    term.type("always\n")
    term.expect("Approved (allow_always): ran rm\n> ", "the reply after 'always'")
    asked_before = term.screen.count("Allow? ")
    term.type('/ask rm {"path": "y"}\n')  # the same tool in a later run: not asked again
    term.expect("[tool rm allowed: you answered 'always' earlier in this chat]", "the standing answer's note")
    term.expect("Approved (allow_always): ran rm\n> ", "the reply without a question")
    term.type('/ask mv {"to": "z"}\n')  # another tool is asked
    term.expect("Allow? ", "the approval prompt for another tool")
    term.type("N\n")
    term.expect("Not approved (reject_always): did not run mv\n> ", "the reply after 'never'")
    term.type('/ask mv {"to": "w"}\n')
    term.expect("[tool mv rejected: you answered 'never' earlier in this chat]", "the standing 'never'")
    term.expect("Not approved (reject_always): did not run mv\n> ", "the reply without a question")
    assert term.screen.count("Allow? ") == asked_before + 1, term.screen
    term.type("/exit\n")
    code, _ = term.finish()
    assert code == 0 and "Traceback" not in term.screen, term.screen


def test_chat_ctrl_d_at_a_question_answers_it_and_the_chat_goes_on(terminal) -> None:
    term = terminal("chat", stdout_on_terminal=True)
    term.expect("> ", "the chat prompt")
    term.type(ASK_RM + "\n")
    term.expect("Allow? ", "the approval prompt")
    term.type("\x04")  # Ctrl-D: no to this question
    term.expect("Not approved (reject_once): did not run rm\n> ", "the reply and the prompt again")
    term.type("/question Which branch?\n")
    term.expect("answer (text, required): ", "the question's field")
    term.type("\x04")  # Ctrl-D: the question is declined
    term.expect("No answer (decline)\n> ", "the reply and the prompt again")
    term.type("hello\n")
    term.expect("You said: hello (1 word, turn 3)\n> ", "the next turn, with the conversation kept")
    term.type("\x04")  # Ctrl-D at the idle prompt ends the chat, on a line of its own
    code, _ = term.finish()
    assert code == 0 and "Traceback" not in term.screen, term.screen
    assert term.screen.endswith("> \n"), repr(term.screen[-40:])


def test_chat_ctrl_c_at_the_idle_prompt_ends_its_line(terminal) -> None:
    term = terminal("chat", stdout_on_terminal=True)
    term.expect("> ", "the chat prompt")
    term.type("\x03")
    code, _ = term.finish()
    assert code == 130 and "Traceback" not in term.screen, term.screen
    assert term.screen.endswith("\n"), repr(term.screen[-40:])  # the shell's prompt starts a line of its own


# -- not a terminal: the fallback policy ------------------------------------------------------


def _run(*args: str, input: str | None = None, env: dict[str, str] | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "onedoor", *args], input=input, stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True, text=True, env={**_env(), **(env or {})}, cwd=cwd, timeout=120,
    )


def test_not_a_terminal_denies_by_default() -> None:
    result = _run("run", ASK_RM)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Not approved (reject_once): did not run rm\n"
    assert "stdin is not a terminal, ask_fallback is deny" in result.stderr
    question = _run("run", "/question Which branch?")
    assert question.stdout == "No answer (decline)\n"


def test_not_a_terminal_allow() -> None:
    result = _run("run", "--ask-fallback", "allow", ASK_RM)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Approved (allow_once): ran rm\n"
    assert _run("run", "--ask-fallback=allow", "/question Which branch?").stdout == "No answer (decline)\n"


def test_not_a_terminal_fail_is_one_clear_line_and_a_nonzero_exit() -> None:
    result = _run("run", "--ask-fallback", "fail", ASK_RM)
    assert result.returncode == 1, result.stderr
    assert result.stdout.strip() == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("onedoor:")]
    assert len(errors) == 1 and "Allow the agent to run rm?" in errors[0], result.stderr
    assert "Traceback" not in result.stderr


def test_the_policy_comes_from_the_terminal_option_too(tmp_path: Path) -> None:
    (tmp_path / "onedoor.toml").write_text('[options.terminal]\nask_fallback = "allow"\n')
    from_file = _run("run", ASK_RM, cwd=tmp_path)
    assert from_file.stdout == "Approved (allow_once): ran rm\n", from_file.stderr
    flag_wins = _run("run", "--ask-fallback", "deny", ASK_RM, cwd=tmp_path)
    assert flag_wins.stdout == "Not approved (reject_once): did not run rm\n", flag_wins.stderr
    option = _run("run", "-o", "terminal.ask_fallback=allow", ASK_RM)
    assert option.stdout == "Approved (allow_once): ran rm\n", option.stderr
    env = _run("run", ASK_RM, env={"ONEDOOR_TERMINAL_ASK_FALLBACK": "allow"})
    assert env.stdout == "Approved (allow_once): ran rm\n", env.stderr


def test_a_bad_policy_is_one_line_and_exit_2() -> None:
    result = _run("run", "--ask-fallback", "maybe", "hi")
    assert result.returncode == 2
    assert result.stderr.strip() == "onedoor: error: --ask-fallback must be one of deny, allow, fail; got 'maybe'"
    typer_path = _run("run", "-oreasoning=false", "--ask-fallback", "maybe", "hi")  # the typer application
    assert typer_path.returncode == 2 and "--ask-fallback must be one of" in typer_path.stderr


def test_json_lines_carry_the_question_events() -> None:
    result = _run("run", "--json", "--ask-fallback", "allow", ASK_RM)
    kinds = [json.loads(line)["type"] for line in result.stdout.splitlines()]
    assert "question_asked" in kinds and "question_answered" in kinds
    answered = [json.loads(line) for line in result.stdout.splitlines() if '"question_answered"' in line]
    assert answered[0]["answer"]["outcome"] == "allow_once" and answered[0]["answer"]["how"] == "policy"


def test_chat_with_piped_input_uses_the_policy() -> None:
    result = _run("chat", "--ask-fallback", "allow", input=ASK_RM + "\n/question Which branch?\n/exit\n")
    assert result.returncode == 0, result.stderr
    assert "Approved (allow_once): ran rm" in result.stdout
    assert "No answer (decline)" in result.stdout
    assert "ask_fallback is allow" in result.stdout


def test_ask_fallback_is_listed_in_plugins_options() -> None:
    result = _run("plugins", "--options")
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  terminal "))
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("      "):
            break
        block.append(line.strip())
    assert any(line.startswith("-o ask_fallback='deny'") for line in block), block


# -- the fast path and the typer command read --ask-fallback alike ----------------------------


@pytest.mark.parametrize("args, policy", [
    (["run", "--ask-fallback", "allow", "hi"], "allow"),
    (["run", "hi", "--ask-fallback=fail", "--json"], "fail"),
    (["run", "--ask-fallback", "nonsense", "hi"], "nonsense"),  # checked later, by run_command
    (["run", "hi"], None),
])
def test_the_fast_path_reads_ask_fallback_as_typer_does(args, policy, monkeypatch) -> None:
    import onedoor.cli.app as cli_app
    from onedoor.cli import RunRequest, parse_run_args

    fast = parse_run_args(args)
    assert fast is not None and fast.ask_fallback == policy
    seen: list[RunRequest] = []
    monkeypatch.setattr(cli_app, "run_command", lambda request: seen.append(request) or 0)
    assert cli_app.invoke(args) == 0
    assert seen == [fast]


def test_run_with_a_policy_stays_on_the_fast_path() -> None:
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['onedoor'] + sys.argv[1:]\n"
        "try:\n"
        "    runpy.run_module('onedoor', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('TYPER=' + str('typer' in sys.modules), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe, "run", "--ask-fallback", "allow", ASK_RM],
                            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=_env())
    assert result.stdout == "Approved (allow_once): ran rm\n" and "TYPER=False" in result.stderr, result.stderr

