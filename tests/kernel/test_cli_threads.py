"""`onedoor threads ls|show|rm`: the real command in a subprocess, on a real SQLite store
that the test fills (and reads back) through the store's own API."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from kernel_test_helpers import run_cli
from onedoor.messages import Message, ToolCall
from onedoor.threads.sqlite import SQLiteThreadStore

pytestmark = pytest.mark.timeout(120)


def in_store(path: Path, work: Any) -> Any:
    """Run ``await work(store)`` on the SQLite file at ``path``, then close the store."""

    async def main() -> Any:
        store = SQLiteThreadStore(path)
        try:
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(main())


def add_thread(path: Path, owner: str, *turns: str, title: str = "") -> str:
    """A thread of ``owner`` with one user/assistant exchange per turn (the first with a tool call)."""

    async def work(store: SQLiteThreadStore) -> str:
        thread = await store.create(owner, title=title)
        messages: list[Message] = []
        for index, text in enumerate(turns):
            messages.append(Message("user", text))
            if index == 0:
                messages.append(Message("assistant", "", (ToolCall("c1", "word_count", {"text": text}),)))
                messages.append(Message("tool", '{"words": 1}', tool_call_id="c1"))
            messages.append(Message("assistant", f"reply to {text}"))
        await store.append(owner, thread.id, messages, expected_version=thread.version)
        return thread.id

    return in_store(path, work)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


def threads(data_dir: Path, *args: str) -> Any:
    """`onedoor threads ARGS` with onedoor's data directory at ``data_dir``."""
    return run_cli("threads", *args, env={"ONEDOOR_DATA_DIR": str(data_dir)})


def one_error_line(result: Any) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onedoor: error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_an_empty_store_lists_nothing(data_dir: Path) -> None:
    result = threads(data_dir, "ls")
    assert result.returncode == 0 and result.stdout == "", result.stderr
    assert "no threads yet" in result.stderr
    as_json = threads(data_dir, "ls", "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == []


def test_ls_show_and_rm_in_the_default_store(data_dir: Path) -> None:
    db = data_dir / "threads.sqlite3"  # the default file in onedoor's data directory
    older = add_thread(db, "local", "first question", "second question")
    newer = add_thread(db, "local", "another topic", title="Named \x1b[31mred\x1b[0m")
    hidden = add_thread(db, "alice", "alice's own")

    listing = threads(data_dir, "ls")
    assert listing.returncode == 0, listing.stderr
    rows = listing.stdout.splitlines()
    assert rows[0].split() == ["ID", "UPDATED", "MESSAGES", "TITLE"]
    assert [row.split()[0] for row in rows[1:]] == [newer, older]  # newest first; alice's is not the terminal's
    assert rows[2].split()[3] == "6" and rows[2].endswith("first question")
    assert "\x1b" not in listing.stdout and rows[1].endswith("Named [31mred[0m")  # escapes cannot reach the terminal

    summaries = json.loads(threads(data_dir, "ls", "--json").stdout)
    assert [(s["id"], s["message_count"], s["title"]) for s in summaries] == [
        (newer, 4, "Named \x1b[31mred\x1b[0m"), (older, 6, "first question")
    ]
    assert len(json.loads(threads(data_dir, "ls", "--json", "--limit", "1").stdout)) == 1

    shown = threads(data_dir, "show", older)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == f"thread {older}  first question"
    body = [line for line in shown.stdout.splitlines()[3:]]
    assert body == [
        "user: first question",
        '  [tool word_count {"text": "first question"}]',
        '  [tool result] {"words": 1}',
        "assistant: reply to first question",
        "user: second question",
        "assistant: reply to second question",
    ]
    full = json.loads(threads(data_dir, "show", older, "--json").stdout)
    assert full["id"] == older and full["messages"][1] == {
        "role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "word_count",
                                                              "arguments": {"text": "first question"}}],
    }

    removed = threads(data_dir, "rm", older)
    assert removed.returncode == 0 and removed.stdout.strip() == f"deleted {older}", removed.stderr
    assert in_store(db, lambda store: store.get("local", older)) is None  # really gone from the file
    assert [s["id"] for s in json.loads(threads(data_dir, "ls", "--json").stdout)] == [newer]
    assert in_store(db, lambda store: store.get("alice", hidden)) is not None


def test_unknown_and_bad_ids_are_one_line_each(data_dir: Path) -> None:
    db = data_dir / "threads.sqlite3"
    kept = add_thread(db, "local", "kept")
    alices = add_thread(db, "alice", "not the terminal's")

    for command in ("show", "rm"):
        unknown = threads(data_dir, command, "t-000000000000000000000000")
        assert unknown.returncode == 1 and unknown.stdout == ""
        assert "no thread 't-000000000000000000000000'" in one_error_line(unknown)
        others = threads(data_dir, command, alices)  # another principal's thread is not there for `local`
        assert others.returncode == 1 and f"no thread {alices!r}" in one_error_line(others)
        bad = threads(data_dir, command, "not an id")
        assert bad.returncode == 2 and "a thread id is 1-128" in one_error_line(bad)
    assert in_store(db, lambda store: store.get("alice", alices)) is not None

    both = threads(data_dir, "rm", "t-000000000000000000000000", kept)
    assert both.returncode == 1 and both.stdout.strip() == f"deleted {kept}"  # every id is tried
    assert in_store(db, lambda store: store.get("local", kept)) is None


def test_the_store_path_option_and_a_config_without_a_store(tmp_path: Path, data_dir: Path) -> None:
    elsewhere = tmp_path / "elsewhere.sqlite3"
    only_there = add_thread(elsewhere, "local", "somewhere else")
    listed = threads(data_dir, "ls", "--json", "-o", f"sqlite.path={elsewhere}")
    assert [s["id"] for s in json.loads(listed.stdout)] == [only_there]
    assert json.loads(threads(data_dir, "ls", "--json").stdout) == []

    config = tmp_path / "onedoor.toml"
    config.write_text('store = "none"\n')
    none = threads(data_dir, "ls", "--config", str(config))
    assert none.returncode == 2 and "no thread store" in one_error_line(none)


def test_threads_alone_shows_its_commands(data_dir: Path) -> None:
    result = threads(data_dir)
    shown = result.stdout + result.stderr
    assert result.returncode == 2 and all(name in shown for name in ("ls", "show", "rm")), shown


@pytest.mark.skipif(sys.platform == "win32", reason="the CLI's import check is POSIX-only here")
def test_a_plain_run_imports_no_store_module(data_dir: Path) -> None:
    code = (
        "import sys, runpy\n"
        "sys.argv = ['onedoor', 'run', 'hello']\n"
        "try:\n"
        "    runpy.run_module('onedoor', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('typer', 'sqlite3', 'onedoor.threads.sqlite', 'onedoor.builtins.thread_commands',\n"
        "                     'onedoor.builtins.terminal_threads') if m in sys.modules]\n"
        "print('LOADED=' + ','.join(heavy), file=sys.stderr)\n"
    )
    import subprocess

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "You said: hello" in result.stdout
    assert result.stderr.rstrip().endswith("LOADED="), result.stderr
