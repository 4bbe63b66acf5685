"""The CLI as a user runs it: streaming, JSON events, errors, start-up imports, chat."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from kernel_test_helpers import run_cli

HEAVY = ["fastapi", "starlette", "uvicorn", "mcp", "acp", "ag_ui", "slim_bindings", "pydantic_ai", "run_agent", "opentelemetry",
         "prometheus_client"]


def test_run_prints_the_reply():
    result = run_cli("run", "hello there")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "You said: hello there (2 words, turn 1)\n"
    assert "[tool word_count" in result.stderr, "tool calls are shown on stderr"


def test_the_scripted_reply_counts_one_word_in_the_singular():
    result = run_cli("run", "--reasoning", "hello")
    assert result.stdout == "You said: hello (1 word, turn 1)\n", result.stderr
    assert "The user wrote 1 word; this is turn 1." in result.stderr
    assert run_cli("run", "hello there").stdout == "You said: hello there (2 words, turn 1)\n"


def test_run_json_prints_one_event_a_line():
    result = run_cli("run", "--json", "hi")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0]["type"] == "run_started" and events[-1]["type"] == "run_finished"
    kinds = {e["type"] for e in events}
    assert {"reasoning_delta", "tool_started", "tool_finished", "text_delta"} <= kinds
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == events[-1]["text"]


def test_run_streams_before_the_reply_is_finished():
    proc = subprocess.Popen(
        [sys.executable, "-m", "onedoor", "run", "-o", "delay=0.2", "-o", "reasoning=false", "-o", "tool=false",
         "one two three four five six"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    first = proc.stdout.read(4)  # "You " arrives while the rest is still being written
    still_running = proc.poll() is None
    rest, _ = proc.communicate(timeout=30)
    assert first == "You " and still_running
    assert (first + rest).startswith("You said: one two")


def test_failed_run_exit_code_and_message():
    result = run_cli("run", "/fail boom please")
    assert result.returncode == 1
    assert "the run failed: backend 'scripted' failed: ScriptedFailure" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args,needle",
    [
        (["run", "-o", "delay=soon", "hi"], "expected a number"),
        (["run", "-o", "colour=red", "hi"], "unknown option 'colour'"),
        (["run", "-o", "novalue", "hi"], "must look like name=value"),
        (["run", ""], "the message is empty"),
        (["run", "-o", "limits.max_message_chars=5", "too long a message"], "limit is 5"),
        (["serve", "--door", "terminal", "--transport", "stdio", "--port", "3"], "no chosen plugin takes option 'port'"),
        (["run", "--config", "/nonexistent/onedoor.toml", "hi"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, needle):
    result = run_cli(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert needle in result.stderr and "Traceback" not in result.stderr


def test_env_and_config_file_options(tmp_path):
    env_result = run_cli("run", "x", env={"ONEDOOR_SCRIPTED_REPLY": "from the environment"})
    assert env_result.stdout.strip() == "from the environment"
    config = tmp_path / "onedoor.toml"
    config.write_text('[options.scripted]\nreply = "from the file"\n')
    file_result = run_cli("run", "--config", str(config), "x")
    assert file_result.stdout.strip() == "from the file"
    flag_wins = run_cli("run", "--config", str(config), "-o", "reply=from the flag", "x")
    assert flag_wins.stdout.strip() == "from the flag"


def test_run_imports_no_server_library():
    code = (
        "import sys, runpy\n"
        "sys.argv = ['onedoor', 'run', 'hello']\n"
        "try:\n"
        "    runpy.run_module('onedoor', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "You said: hello" in result.stdout
    assert "HEAVY=\n" in result.stderr or result.stderr.rstrip().endswith("HEAVY="), result.stderr


# What a run given only text never needs: the classes of the events only some runs send,
# a door's request side of the observers, the content model and parser, journal cursors.
FIRST_USE = ["onedoor._late_events", "onedoor.observe.requests", "onedoor.content._model", "onedoor.content._parse",
             "onedoor.journal.cursors"]


def _loaded_after_run(*args: str) -> tuple[str, list[str]]:
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['onedoor', 'run', *{list(args)!r}]\n"
        "try:\n"
        "    runpy.run_module('onedoor', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print('LOADED=' + ','.join(m for m in {FIRST_USE!r} if m in sys.modules), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    loaded = result.stderr.rstrip().rpartition("LOADED=")[2]
    return result.stdout, [m for m in loaded.split(",") if m]


def test_a_text_run_leaves_for_first_use_what_it_does_not_need():
    out, loaded = _loaded_after_run("hello")
    assert "You said: hello" in out
    assert loaded == [], loaded
    out, loaded = _loaded_after_run('/state {"n": 1} /image hello')  # a state change and a reply part
    assert 'State: {"n":1}' in out
    assert "onedoor._late_events" in loaded, loaded


def test_importing_onedoor_imports_neither_typing_nor_its_names():
    code = ("import sys\nbefore = {'typing', 'collections.abc'} & set(sys.modules)\nimport onedoor\n"
            "print(sorted({'typing', 'collections.abc', 'onedoor.kernel', 'onedoor.events'} & set(sys.modules) - before))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


def test_plugins_listing_imports_no_plugin_module():
    code = (
        "import sys, runpy\n"
        "sys.argv = ['onedoor', 'plugins']\n"
        "try:\n"
        "    runpy.run_module('onedoor', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = [m for m in sys.modules if m.startswith('onedoor_') or m.startswith('onedoor.builtins')]\n"
        f"loaded += [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print('LOADED=' + ','.join(sorted(loaded)), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stderr.rstrip().endswith("LOADED="), result.stderr


def test_interactive_chat_keeps_history():
    result = run_cli("chat", input="hello\nagain\n/reset\nfresh start\n/exit\n", timeout=60)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "You said: hello (1 word, turn 1)" in out
    assert "You said: again (1 word, turn 2)" in out
    assert "[conversation forgotten]" in out
    assert "You said: fresh start (2 words, turn 1)" in out


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.startswith("onedoor ")


def test_third_party_backend_from_examples():
    result = run_cli("run", "--backend", "echo", "hello there")
    if "no backend named 'echo'" in result.stderr and os.environ.get("ONEDOOR_COMBO") != "kernel":
        pytest.skip("examples/backend-echo is not installed in this environment (the nox kernel combo installs it)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "HELLO THERE"


def test_example_backend_passes_the_contract_checker():
    if os.environ.get("ONEDOOR_COMBO") == "kernel":
        import onedoor_example_echo as echo  # the kernel combo must have it
    else:
        echo = pytest.importorskip("onedoor_example_echo", reason="examples/backend-echo is installed by the nox kernel combo")
    from onedoor.testing import check_backend

    report = check_backend(echo.EchoAgent, "keep the contract")
    assert report.ok, report.problems
    assert report.events[-1].text == "KEEP THE CONTRACT"


def test_stdout_stays_clean_on_stdio_even_when_the_backend_prints(tmp_path):
    from kernel_test_helpers import make_dist

    site = make_dist(
        tmp_path / "noisy", "onedoor-test-noisy",
        {"onedoor.backends": {"noisy": "od_noisy:Noisy"}, "onedoor.doors": {"jsonecho": "od_noisy:JsonEcho"}},
        {"od_noisy.py": """
            import json, os
            from onedoor.events import RunFinished, RunStarted, TextDelta

            class Noisy:
                def run(self, message, *, history=None):
                    print("stray print from the backend")
                    os.system("echo stray output from a child process")
                    os.write(1, b"raw write to fd 1\\n")
                    yield RunStarted("r")
                    yield TextDelta(message.upper())
                    yield RunFinished("r", message.upper())

            class JsonEcho:
                shapes = frozenset({"channel"})
                framing = "ndjson"

                async def serve_channel(self, channel, ctx):
                    from onedoor.composition import MessageTooLarge
                    while True:
                        try:
                            line = await channel.recv()
                        except MessageTooLarge as exc:
                            await channel.send(json.dumps({"error": str(exc)}))
                            continue
                        if line is None:
                            return
                        try:
                            request = json.loads(line)
                        except ValueError:
                            await channel.send(json.dumps({"error": "not json"}))
                            continue
                        async with ctx.kernel.run(request["say"]) as run:
                            async for event in run:
                                pass
                        await channel.send(json.dumps({"reply": run.outcome.text}))
        """},
    )
    big = "x" * 5000
    lines = "\n".join([json.dumps({"say": "one"}), "garbage{", big, json.dumps({"say": "two"})]) + "\n"
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", "--door", "jsonecho", "--transport", "stdio", "-b", "noisy",
         "-o", "max_message_bytes=1000"],
        input=lines, capture_output=True, text=True, timeout=60, env={**os.environ, **env},
    )
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert replies == [
        {"reply": "ONE"}, {"error": "not json"}, {"error": "message of 5001 bytes is over the limit of 1000 bytes"},
        {"reply": "TWO"},
    ], result.stdout
    assert "stray print" in result.stderr and "child process" in result.stderr and "raw write" in result.stderr


def test_a_door_printing_at_import_cannot_reach_stdio_stdout(tmp_path):
    from kernel_test_helpers import make_dist

    site = make_dist(
        tmp_path / "loud", "onedoor-test-loud",
        {"onedoor.doors": {"loud": "od_loud:LoudDoor"}},
        {"od_loud.py": """
            print("printed while the door module was imported")

            class LoudDoor:
                shapes = frozenset({"channel"})
                framing = "ndjson"

                async def serve_channel(self, channel, ctx):
                    line = await channel.recv()
                    await channel.send('{"echo": %s}' % line)
        """},
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", "--door", "loud", "--transport", "stdio"],
        input='"hi"\n', capture_output=True, text=True, timeout=60, env=env,
    )
    assert result.stdout == '{"echo": "hi"}\n', result.stdout
    assert "printed while the door module was imported" in result.stderr
