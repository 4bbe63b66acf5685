"""A reader that goes away (`onedoor … | head -n 1`) is a normal end of a command: no
traceback, no "Exception ignored … BrokenPipeError" at exit, exit 0, and the run is
cancelled so that the backend stops.

Each command runs as a subprocess whose stdout is a real pipe: either one that the test
reads a line from and then closes (what `head -n 1` does), or one whose read end is
closed before the command starts (so that even a short output meets a closed pipe).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_test_helpers import make_dist, run_cli

pytestmark = pytest.mark.timeout(180)

LONG = "/long 100000 x"  # far more than a pipe holds: the command is still writing when the reader leaves
NOISE = ("Traceback", "BrokenPipeError", "Exception ignored")

# A hook plugin that writes each run's outcome to the file $OD_OUTCOME_FILE.
OUTCOME_HOOK = """
import os
from onedoor.hookspecs import hookimpl

@hookimpl
def onedoor_run_finished(run, outcome):
    with open(os.environ["OD_OUTCOME_FILE"], "a") as f:
        f.write(getattr(outcome, "stop_reason", type(outcome).__name__) + "\\n")
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONEDOOR_")}
    site = make_dist(tmp_path / "site", "onedoor-test-outcome", {"onedoor.hooks": {"outcome": "od_outcome"}},
                     {"od_outcome.py": OUTCOME_HOOK})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH", "")]))
    env["OD_OUTCOME_FILE"] = str(tmp_path / "outcomes")
    env["ONEDOOR_DATA_DIR"] = str(tmp_path / "data")
    return {**env, **extra}


def _outcomes(tmp_path: Path) -> list[str]:
    path = tmp_path / "outcomes"
    return path.read_text().split() if path.exists() else []


def _assert_quiet(code: int, stderr: str) -> None:
    assert code == 0, stderr
    for noise in NOISE:
        assert noise not in stderr, stderr


def run_into_a_closed_pipe(args: list[str], env: dict[str, str], input: str | None = None):
    """Run `onedoor ARGS` with stdout a pipe that nobody reads any more; (exit code, stderr)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "onedoor", *args], stdout=write_end, stderr=subprocess.PIPE, text=True,
            input=input, stdin=None if input is not None else subprocess.DEVNULL, env=env, timeout=120,
        )
    finally:
        os.close(write_end)
    return result.returncode, result.stderr


@pytest.mark.parametrize("mode", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize("path", [[], ["-oreasoning=true"]], ids=["fast", "typer"])  # -oX=Y: the typer application
def test_run_piped_to_head_stops_quietly_and_cancels_the_run(tmp_path: Path, mode: list[str], path: list[str]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "onedoor", "run", *mode, *path, LONG],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=_env(tmp_path),
    )
    first = os.read(proc.stdout.fileno(), 4096)  # type: ignore[union-attr]  # a text reply's one newline is at its end
    proc.stdout.close()  # type: ignore[union-attr]  # what `head -n 1` does next
    code = proc.wait(120)
    stderr = proc.stderr.read().decode()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    assert first, stderr
    _assert_quiet(code, stderr)
    assert _outcomes(tmp_path) == ["cancelled"], "the run was cancelled when its reader went away"


@pytest.mark.parametrize("args", [
    ["run", "hello"], ["run", "--json", "hello"], ["run", "-oreasoning=false", "hello"],
    ["plugins"], ["plugins", "--json"], ["plugins", "--options"],
], ids=" ".join)
def test_output_into_a_closed_pipe_is_a_quiet_end(tmp_path: Path, args: list[str]) -> None:
    code, stderr = run_into_a_closed_pipe(args, _env(tmp_path))
    _assert_quiet(code, stderr)
    if args[0] == "run":
        assert _outcomes(tmp_path) == ["cancelled"]


def test_chat_into_a_closed_pipe_is_a_quiet_end(tmp_path: Path) -> None:
    code, stderr = run_into_a_closed_pipe(["chat"], _env(tmp_path), input=LONG + "\nhello\n/exit\n")
    _assert_quiet(code, stderr)
    assert _outcomes(tmp_path) in ([], ["cancelled"])  # the banner may meet the closed pipe before any run


def test_chat_piped_to_head_cancels_its_run(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "onedoor", "chat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=_env(tmp_path),
    )
    proc.stdin.write((LONG + "\n").encode())  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]
    proc.stdout.readline()  # type: ignore[union-attr]  # the banner
    proc.stdout.read(100)  # type: ignore[union-attr]  # the reply is being written
    proc.stdout.close()  # type: ignore[union-attr]
    code = proc.wait(120)  # stdin is still open: the chat ends because its stdout did
    proc.stdin.close()  # type: ignore[union-attr]
    stderr = proc.stderr.read().decode()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]
    _assert_quiet(code, stderr)
    assert _outcomes(tmp_path) == ["cancelled"]


@pytest.mark.parametrize("args", [["ls"], ["ls", "--json"], ["show", "{id}"], ["show", "--json", "{id}"]], ids=" ".join)
def test_threads_into_a_closed_pipe_is_a_quiet_end(tmp_path: Path, args: list[str]) -> None:
    env = _env(tmp_path)
    made = run_cli("chat", "--thread", "new", input="hello there\n/exit\n", env=env)
    thread_id = re.search(r"new thread (t-[0-9a-f]+)", made.stderr)
    assert made.returncode == 0 and thread_id, made.stderr
    code, stderr = run_into_a_closed_pipe(["threads", *(a.format(id=thread_id[1]) for a in args)], env)
    _assert_quiet(code, stderr)


def test_the_exit_code_is_documented() -> None:
    run_help = run_cli("run", "--help")
    assert "0 done (and when stdout closes first" in " ".join(run_help.stdout.split()), run_help.stdout
    every_command = run_cli("--help")
    assert "stdout closes early (`| head`) stops there quietly, exit 0" in " ".join(every_command.stdout.split())
