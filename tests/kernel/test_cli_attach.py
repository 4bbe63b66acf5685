"""Files from the terminal (#25) and usage in `onedoor run --json` (#27): `onedoor run
--attach FILE`, `/attach FILE` in `onedoor chat`, each a real `python -m onedoor` process
with the scripted backend, which says what it received ("Received: 1 image (image/png, …)")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_test_helpers import run_cli
from onedoor.builtins.scripted_extras import DOT_PNG

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "dot.png").write_bytes(DOT_PNG)
    (tmp_path / "notes.md").write_text("# Notes\nbuy milk\n")
    (tmp_path / "fake.png").write_text("this is not a picture")
    (tmp_path / "report.pdf").write_bytes(b"%PDF-1.4 not much of a report")
    return tmp_path


def one_error_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, (result.returncode, result.stderr)
    assert lines[0].startswith("onedoor: ") and "Traceback" not in result.stderr
    return lines[0]


def test_run_sends_the_files_with_the_message(files: Path) -> None:
    result = run_cli("run", "--attach", str(files / "dot.png"), f"--attach={files / 'notes.md'}", "--attach",
                     str(files / "report.pdf"), "what are these?")
    assert result.returncode == 0, result.stderr
    notes_uri = (files / "notes.md").resolve().as_uri()
    assert result.stdout.startswith(
        "Received: 1 image (image/png, 70 bytes, dot.png); 1 resource (text/markdown, 17 bytes, "
        f"{notes_uri}); 1 document (application/pdf, 29 bytes, report.pdf). You said: what are these?"
    ), result.stdout
    assert "buy milk" in result.stdout  # a text file goes as its text, which every backend can be given


def test_a_file_alone_is_a_message(files: Path) -> None:
    result = run_cli("run", "--attach", str(files / "dot.png"), "")
    assert result.returncode == 0 and result.stdout.startswith("Received: 1 image"), result.stderr


@pytest.mark.parametrize("name, options, needle", [
    ("missing.png", [], "cannot attach {path}: No such file or directory"),
    (".", [], "cannot attach {path}: not a file"),
    ("dot.png", ["-o", "limits.max_part_bytes=50"], "it has 70 bytes; the limit is 50 (limits.max_part_bytes)"),
    ("fake.png", [], "the bytes are not image/png"),
    ("dot.png", ["-o", "accepts=document"], "does not take image parts"),
])
def test_a_file_that_cannot_go_is_one_line_and_nothing_runs(files: Path, name: str, options: list[str], needle: str):
    path = files / name
    result = run_cli("run", *options, "--attach", str(path), "hello")
    assert needle.format(path=path) in one_error_line(result)
    assert result.stdout == ""


def test_run_json_carries_the_usage_and_the_parts(files: Path) -> None:
    result = run_cli("run", "--json", "--attach", str(files / "dot.png"), "/image /draw one two")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    finished = events[-1]
    assert finished["type"] == "run_finished"
    deltas = sum(e["type"] == "text_delta" for e in events)
    [usage] = finished["usage"]  # the scripted backend counts words in and text deltas out
    assert usage["model"] == "scripted" and usage["output_tokens"] == deltas and usage["requests"] == 1
    assert usage["input_tokens"] == len("/image /draw one two [image dot.png: image/png, 70 bytes]".split())
    assert [e["part"]["name"] for e in events if e["type"] == "reply_part"] == ["dot.png"]
    drawn = next(e for e in events if e["type"] == "tool_finished" and e["name"] == "draw")
    assert drawn["parts"][0]["media_type"] == "image/png"


def test_run_names_the_parts_of_the_reply_on_stderr(files: Path) -> None:
    result = run_cli("run", "/image /draw a picture")
    assert result.returncode == 0, result.stderr
    assert "[the reply holds [image dot.png: image/png, 70 bytes]" in result.stderr
    assert "[tool draw -> drew dot.png [image dot.png: image/png, 70 bytes]]" in result.stderr
    assert "[image" not in result.stdout.splitlines()[0]  # stdout is the reply's text


def test_chat_attach_goes_with_the_next_message_only(files: Path) -> None:
    typed = (f"/attach {files / 'dot.png'}\n/attach {files / 'nope.png'}\n/attach\nwhat is it\nand this\n"
             f"/attach {files / 'notes.md'}\n/reset\nfresh\n/exit\n")
    result = run_cli("chat", input=typed, timeout=60)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "[attached [image dot.png: image/png, 70 bytes]: it goes with your next message]" in out
    assert f"[cannot attach {files / 'nope.png'}: No such file or directory]" in out
    assert "attached for your next message: [image dot.png: image/png, 70 bytes]]" in out
    assert "Received: 1 image (image/png, 70 bytes, dot.png). You said: what is it" in out
    assert "You said: and this (2 words, turn 2)" in out  # the file went once; the history keeps it
    assert "You said: fresh (1 word, turn 1)" in out and out.count("Received:") == 1  # /reset dropped notes.md


@pytest.mark.skipif(sys.platform == "win32", reason="the CLI's import check is POSIX-only here")
def test_run_with_a_file_imports_no_server_library(files: Path) -> None:
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['onedoor', 'run', '--attach', {str(files / 'dot.png')!r}, 'hello']\n"
        "try:\n"
        "    runpy.run_module('onedoor', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('typer', 'fastapi', 'starlette', 'uvicorn', 'sqlite3', 'jsonpatch') if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.startswith("Received: 1 image"), result.stderr
    assert result.stderr.rstrip().endswith("HEAVY="), result.stderr
