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
from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor.content import Part, text_of
from onedoor.messages import Message, ToolCall
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor.usage import ModelUsage

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
    assert result.returncode == 2 and all(name in shown for name in ("ls", "show", "rm", "state")), shown


def add_rich_thread(path: Path) -> str:
    """A thread of `local` whose turn sent an image, got one back from a tool, cost something, and has a state."""

    async def work(store: SQLiteThreadStore) -> str:
        thread = await store.create("local", title="pictures")
        image = Part.media("image", "image/png", data=DOT_PNG, name="dot.png")
        messages = [
            Message("user", text_of([Part.of_text("look"), image]), parts=(Part.of_text("look"), image)),
            Message("assistant", "", (ToolCall("c1", "draw", {"what": "a dot"}),)),
            Message("tool", "drew dot.png", tool_call_id="c1", parts=(image,)),
            Message("assistant", "a dot", usage=(ModelUsage("gpt-x", "openai", 1200, 34, cache_read_tokens=1000,
                                                            requests=2, cost=0.0042, currency="USD"),)),
        ]
        kept = await store.append("local", thread.id, messages, expected_version=thread.version)
        await store.update_state("local", thread.id, {"todo": ["milk"]}, expected_version=kept.state_version)
        return thread.id

    return in_store(path, work)


def test_show_names_the_parts_and_what_each_turn_cost(data_dir: Path) -> None:
    thread_id = add_rich_thread(data_dir / "threads.sqlite3")
    shown = threads(data_dir, "show", thread_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[2] == 'state (version 1): {"todo": ["milk"]}'
    assert lines[4:] == [
        "user: look",
        "[image dot.png: image/png, 70 bytes]",
        '  [tool draw {"what": "a dot"}]',
        "  [tool result] drew dot.png [image dot.png: image/png, 70 bytes]",
        "assistant: a dot",
        "  [usage gpt-x (openai): 1,200 in, 34 out tokens (1,000 cached), 2 requests, 0.0042 USD]",
    ]
    full = json.loads(threads(data_dir, "show", thread_id, "--json").stdout)
    assert full["state"] == {"todo": ["milk"]} and full["state_version"] == 1
    assert full["messages"][0]["parts"][1]["name"] == "dot.png"
    assert full["messages"][-1]["usage"][0]["input_tokens"] == 1200


def test_state_shows_sets_and_patches(data_dir: Path) -> None:
    thread_id = add_rich_thread(data_dir / "threads.sqlite3")
    shown = threads(data_dir, "state", thread_id)
    assert shown.returncode == 0 and json.loads(shown.stdout) == {"todo": ["milk"]}, shown.stderr
    assert shown.stderr.strip() == f"thread {thread_id}: state version 1"
    patched = threads(data_dir, "state", thread_id, "--patch", '[{"op": "add", "path": "/todo/-", "value": "eggs"}]')
    assert json.loads(patched.stdout) == {"todo": ["milk", "eggs"]} and "version 2" in patched.stderr
    replaced = threads(data_dir, "state", thread_id, "--set", '{"draft": "hi"}')
    assert json.loads(replaced.stdout) == {"draft": "hi"} and "version 3" in replaced.stderr
    stored = in_store(data_dir / "threads.sqlite3", lambda store: store.get("local", thread_id))
    assert (stored.state, stored.state_version) == ({"draft": "hi"}, 3)


@pytest.mark.parametrize("args, code, needle", [
    (["--patch", '[{"op": "remove", "path": "/nope"}]'], 1, "does not apply"),
    (["--patch", '{"op": "add"}'], 1, "list of JSON Patch operations"),
    (["--set", "[1, 2]"], 1, "a state is a JSON object"),
    (["--set", "{nope"], 2, "--set is not JSON"),
    (["--set", "{}", "--patch", "[]"], 2, "not both"),
])
def test_a_state_change_that_cannot_be_made_is_one_line_and_changes_nothing(data_dir: Path, args, code, needle):
    thread_id = add_rich_thread(data_dir / "threads.sqlite3")
    result = threads(data_dir, "state", thread_id, *args)
    assert result.returncode == code and result.stdout == "", result.stderr
    assert needle in one_error_line(result)
    stored = in_store(data_dir / "threads.sqlite3", lambda store: store.get("local", thread_id))
    assert (stored.state, stored.state_version) == ({"todo": ["milk"]}, 1)


def test_state_of_an_unknown_or_another_principals_thread(data_dir: Path) -> None:
    alices = add_thread(data_dir / "threads.sqlite3", "alice", "hers")
    for thread_id in ("t-000000000000000000000000", alices):
        result = threads(data_dir, "state", thread_id, "--set", "{}")
        assert result.returncode == 1 and f"no thread {thread_id!r}" in one_error_line(result)
    assert threads(data_dir, "state", "not an id").returncode == 2


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
