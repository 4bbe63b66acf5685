"""Usage mistakes on the command line: typer's usage message and exit 2, never a traceback.

These hold on every typer the kernel supports (the oldest, 0.19, uses the click package;
0.28 and later carry their own click) and with or without plugins installed: run this
file in each environment of the matrix. The fast path of `onedoor run`, which reads a
plain command line without typer, is checked against what typer reads from the same one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from kernel_test_helpers import run_cli
from onedoor.cli import RUN_FLAGS, RUN_VALUE_OPTIONS, RunRequest, parse_run_args


def assert_usage_error(result: subprocess.CompletedProcess, needle: str) -> None:
    """Exit 2, typer's message on stderr (with the usage line where click gives one)."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert "Usage: onedoor" in result.stderr or result.stderr.startswith("Error: "), result.stderr
    assert needle in result.stderr, result.stderr


@pytest.mark.parametrize(
    "args,needle",
    [
        (["nope"], "No such command 'nope'"),
        (["run"], "Missing argument"),
        (["run", "--nope", "hi"], "--nope"),
        (["run", "hi", "there"], "unexpected extra argument"),
        (["run", "hi", "-b"], "requires an argument"),
        (["serve", "--port", "abc"], "'--port'"),
        (["serve", "--nope"], "--nope"),
        (["chat", "extra"], "unexpected extra argument"),
        (["plugins", "--check=yes"], "--check"),
        (["--nope"], "--nope"),
    ],
)
def test_a_usage_mistake_prints_the_usage_and_exits_2(args, needle):
    assert_usage_error(run_cli(*args), needle)


def test_onedoor_alone_prints_the_help_and_exits_2():
    result = run_cli()
    assert_usage_error(result, "Commands")
    for command in ("run", "chat", "serve", "plugins"):
        assert command in result.stderr


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["serve", "--help"], ["plugins", "--help"]])
def test_help_is_not_a_mistake(args):
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("\nUsage: onedoor") or result.stdout.startswith("Usage: onedoor"), result.stdout


# Each option's value is shown by what to type (-o NAME=VALUE), not by typer's type label
# (typer 0.29 shows <list[str]>, <str>, <int range>, <path> where no metavar is given).
HELP_METAVARS = {
    ("run",): ["MESSAGE", "-b, --backend NAME", "-o, --option NAME=VALUE", "--config FILE",
               "--ask-fallback deny|allow|fail", "--attach FILE"],
    ("chat",): ["--thread ID|new", "-o, --option NAME=VALUE", "--ask-fallback deny|allow|fail"],
    ("serve",): ["-d, --door NAME", "-t, --transport NAME", "--host ADDRESS", "--port N", "--token TOKEN",
                 "--store NAME", "-o, --option NAME=VALUE", "--config FILE"],
    ("threads", "ls"): ["--limit N", "-o, --option STORE.NAME=VALUE", "--config FILE"],
    ("threads", "show"): ["ID", "-o, --option STORE.NAME=VALUE"],
    ("threads", "rm"): ["ID", "-o, --option STORE.NAME=VALUE"],
    ("threads", "state"): ["ID", "--set JSON", "--patch JSON", "-o, --option STORE.NAME=VALUE"],
    ("plugins",): [],
    (): [],
}
TYPE_LABEL_AFTER_AN_OPTION = re.compile(r"^ +(-\w, )?--[\w-]+ <", re.MULTILINE)


@pytest.mark.parametrize("command", HELP_METAVARS, ids=lambda c: " ".join(c) or "onedoor")
def test_help_shows_what_to_type_for_each_option(command):
    result = run_cli(*command, "--help", env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert not TYPE_LABEL_AFTER_AN_OPTION.search(result.stdout), result.stdout
    assert "<list[" not in "\n".join(line for line in result.stdout.splitlines() if line.lstrip().startswith("-"))
    for shown in HELP_METAVARS[command]:
        assert shown in result.stdout, (shown, result.stdout)


def test_run_reading_a_closed_stdin_is_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "onedoor", "run", "-"],
        capture_output=True, text=True, timeout=60, preexec_fn=lambda: os.close(0),
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == "onedoor: error: cannot read the message: standard input is closed"


def test_run_reading_an_empty_stdin_is_refused_in_one_line():
    result = run_cli("run", "-", input="")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_run_reads_the_message_from_stdin():
    result = run_cli("run", "-", input="from stdin")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("You said: from stdin")


def test_a_plain_run_does_not_import_typer_and_the_rest_does():
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['onedoor'] + sys.argv[1:]\n"
        "try:\n"
        "    runpy.run_module('onedoor', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('TYPER=' + str('typer' in sys.modules), file=sys.stderr)\n"
    )
    plain = subprocess.run([sys.executable, "-c", probe, "run", "-o", "reasoning=false", "hello"],
                           capture_output=True, text=True, timeout=60)
    assert plain.stdout.startswith("You said: hello") and "TYPER=False" in plain.stderr, plain.stderr
    unusual = subprocess.run([sys.executable, "-c", probe, "run", "-oreasoning=false", "hello"],
                             capture_output=True, text=True, timeout=60)
    assert unusual.stdout.startswith("You said: hello") and "TYPER=True" in unusual.stderr, unusual.stderr


# The fast path and the typer command must read a command line alike.

AGREEING = [
    ["run", "hi"],
    ["run", "-"],
    ["run", ""],
    ["run", "--json", "hi", "--reasoning"],
    ["run", "-b", "echo", "hi"],
    ["run", "--backend=echo", "hi"],
    ["run", "hi", "--backend", "echo", "-o", "a=1", "--option", "b=2", "--option=c=3"],
    ["run", "--config", "some/onedoor.toml", "hi"],
    ["run", "--config=x.toml", "--json", "--", "-starts with a dash"],
    ["run", "--", "--json"],
    ["run", "--attach", "a.png", "--attach=notes.md", "-o", "a=1", "look"],
]
LEFT_TO_TYPER = [
    ["run"],
    ["run", "--help"],
    ["run", "a", "b"],
    ["run", "-bx", "hi"],
    ["run", "-o", "-x=1", "hi"],
    ["run", "--json=1", "hi"],
    ["run", "-b=echo", "hi"],
    ["run", "hi", "-b"],
    ["run", "--nope", "hi"],
    ["run", "--attach", "-weird.png", "hi"],
    ["serve"],
    [],
]


def _typer_reads(args: list[str], monkeypatch) -> RunRequest:
    import onedoor.cli.app as cli_app

    seen: list[RunRequest] = []

    def capture(request: RunRequest) -> int:
        seen.append(request)
        return 0

    monkeypatch.setattr(cli_app, "run_command", capture)
    assert cli_app.invoke(args) == 0
    assert len(seen) == 1
    return seen[0]


@pytest.mark.parametrize("args", AGREEING, ids=" ".join)
def test_the_fast_path_reads_a_plain_command_line_as_typer_does(args, monkeypatch):
    fast = parse_run_args(args)
    assert fast is not None
    assert fast == _typer_reads(args, monkeypatch)


@pytest.mark.parametrize("args", LEFT_TO_TYPER, ids=lambda a: " ".join(a) or "(none)")
def test_the_fast_path_leaves_anything_else_to_typer(args):
    assert parse_run_args(args) is None


def test_the_fast_path_knows_every_option_of_the_run_command():
    import typer.main
    from onedoor.cli.app import app

    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    declared = {opt for param in command.params for opt in param.opts if opt.startswith("-")}
    assert declared - {"--help"} == set(RUN_VALUE_OPTIONS) | set(RUN_FLAGS)
