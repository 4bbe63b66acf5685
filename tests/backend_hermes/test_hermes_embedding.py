"""Hermes embedded in onedoor: options, isolation (files, stdout) and `onedoor run` end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from onedoor.errors import OptionsError
from onedoor.plugins.options import parse_options, redacted
from onedoor_backend_hermes import HermesOptions, hermes_backend
from onedoor_test_support import free_port


def parse(cli=None, file=None, environ=None):
    return parse_options(HermesOptions, "hermes", cli=cli, file=file, environ=environ or {})




def test_model_is_required():
    with pytest.raises(OptionsError, match="option 'model' of 'hermes' is required"):
        parse({"base_url": "http://127.0.0.1:9/v1"})


def test_endpoint_or_provider_is_required():
    with pytest.raises(OptionsError, match="base_url .* or provider"):
        parse({"model": "m"})


def test_provider_key_is_required(monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    with pytest.raises(OptionsError, match="missing key .*OPENROUTER_API_KEY"):
        parse({"model": "m", "provider": "openrouter"})


def test_unknown_option():
    with pytest.raises(OptionsError, match="unknown option 'tools'"):
        parse({"model": "m", "base_url": "http://127.0.0.1:9/v1", "tools": "x"})


def test_toolsets_are_fenced(tmp_path):
    base = {"model": "m", "base_url": "http://127.0.0.1:9/v1", "home": str(tmp_path)}
    with pytest.raises(OptionsError, match="terminal act on this machine"):
        parse({**base, "toolsets": "todo,terminal"})
    assert parse({**base, "toolsets": "todo,terminal", "allow_machine_tools": "true"}).toolsets == ["todo", "terminal"]
    with pytest.raises(OptionsError, match="unknown hermes toolset 'nope'"):
        parse({**base, "toolsets": "nope"})
    assert parse(base).toolsets == []


@pytest.mark.parametrize(("given", "parsed"), [("true", True), ("false", False), ("ask", "ask")])
def test_allow_machine_tools_is_true_false_or_ask(tmp_path, given, parsed):
    base = {"model": "m", "base_url": "http://127.0.0.1:9/v1", "home": str(tmp_path), "toolsets": "todo"}
    assert parse({**base, "allow_machine_tools": given}).allow_machine_tools == parsed
    assert parse(file={**base, "allow_machine_tools": parsed}).allow_machine_tools == parsed  # onedoor.toml values
    with pytest.raises(OptionsError, match="allow_machine_tools"):
        parse({**base, "allow_machine_tools": "maybe"})


def test_machine_tools_are_found_inside_composite_toolsets(tmp_path):
    """A toolset that bundles the terminal (hermes-cli, coding, ...) is fenced like the terminal itself."""
    base = {"model": "m", "base_url": "http://127.0.0.1:9/v1", "home": str(tmp_path)}
    for composite in ("hermes-cli", "coding", "debugging"):
        with pytest.raises(OptionsError, match=f"{composite} act on this machine"):
            parse({**base, "toolsets": composite})
    opts = parse({**base, "toolsets": "coding,todo", "allow_machine_tools": "ask"})
    assert {"terminal", "write_file", "execute_code"} <= opts.machine_tools
    assert not {"todo", "web_search", "clarify"} & opts.machine_tools, "tools that stay off the machine are not asked"
    assert parse({**base, "toolsets": "todo,web"}).machine_tools == frozenset()


def test_preflight_unreachable_endpoint(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(OptionsError, match="unreachable endpoint"):
        parse({"model": "m", "base_url": url, "preflight": "yes", "home": str(tmp_path)})


def test_home_defaults_to_onedoor_data_dir(tmp_path):
    opts = parse({"model": "m", "base_url": "http://127.0.0.1:9/v1"}, environ={})
    assert opts.home.endswith(os.path.join("onedoor", "hermes")) or opts.home.endswith("hermes")
    os.environ["ONEDOOR_DATA_DIR_TEST_UNUSED"] = "1"
    from onedoor_backend_hermes.options import default_home

    old = os.environ.get("ONEDOOR_DATA_DIR")
    os.environ["ONEDOOR_DATA_DIR"] = str(tmp_path)
    try:
        assert default_home() == tmp_path / "hermes"
    finally:
        if old is None:
            del os.environ["ONEDOOR_DATA_DIR"]
        else:
            os.environ["ONEDOOR_DATA_DIR"] = old
        del os.environ["ONEDOOR_DATA_DIR_TEST_UNUSED"]


def test_secret_is_redacted():
    opts = HermesOptions(model="m", base_url="http://127.0.0.1:9/v1", api_key="sk-secret-1")
    assert redacted(opts)["api_key"] == "***"


def test_factory_metadata():
    assert hermes_backend.Options is HermesOptions
    assert isinstance(hermes_backend.capabilities, frozenset)


def test_entry_point_module_does_not_import_hermes():
    code = "import sys, onedoor_backend_hermes; print([m for m in ('run_agent', 'openai', 'agent', 'tools') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def _files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def sandbox(tmp_path):
    """A fake HOME, cwd and TMPDIR, with onedoor's data dir inside the sandbox."""
    dirs = {name: tmp_path / name for name in ("home", "cwd", "tmp", "data")}
    for d in dirs.values():
        d.mkdir()
    env = {
        **os.environ, "HOME": str(dirs["home"]), "TMPDIR": str(dirs["tmp"]), "ONEDOOR_DATA_DIR": str(dirs["data"]),
        "XDG_CONFIG_HOME": str(dirs["home"] / ".config"), "XDG_CACHE_HOME": str(dirs["home"] / ".cache"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.pop("HERMES_HOME", None)
    return dirs, env


def _onedoor_run(server, env, cwd, *args):
    return subprocess.run(
        [sys.executable, "-m", "onedoor", "run", "-b", "hermes", "-o", "model=fake-model",
         "-o", f"base_url={server.base_url}", "-o", "api_key=sk-hidden-key", *args],
        capture_output=True, text=True, timeout=120, env=env, cwd=cwd,
    )


def test_onedoor_run_stdout_is_exactly_the_reply(server, sandbox):
    dirs, env = sandbox
    proc = _onedoor_run(server, env, dirs["cwd"], "-o", "toolsets=todo", "--reasoning",
                        '/think /tool todo {"todos": [{"id": "1", "content": "tea", "status": "pending"}]}')
    assert proc.returncode == 0, proc.stderr
    reply = 'The tool returned: {"todos": [{"id": "1", "content": "tea", "status": "pending"}], "summary": {"total": 1, "pending": 1, "in_progress": 0, "completed": 0, "cancelled": 0}}'
    assert proc.stdout.rstrip("\n") == reply and proc.stdout.count("\n") <= 1
    assert "sk-hidden-key" not in proc.stdout + proc.stderr
    # nothing written outside the isolated home (onedoor's data dir/hermes)
    home = dirs["data"] / "hermes"
    assert (home / "config.yaml").is_file()
    outside = _files(dirs["home"]) | _files(dirs["cwd"]) | _files(dirs["tmp"]) | (_files(dirs["data"]) - _files(home))
    # stevedore (onedoor's plugin loader, not hermes) caches entry points under ~/.cache
    outside = {p for p in outside if "/.cache/python-entrypoints/" not in p}
    assert outside == set()


def test_onedoor_run_json_and_failures(server, sandbox):
    dirs, env = sandbox
    proc = _onedoor_run(server, env, dirs["cwd"], "--json", "hi")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[0]["type"] == "run_started" and events[-1] == {**events[-1], "type": "run_finished", "text": "You said: hi (turn 1)"}
    proc = _onedoor_run(server, env, dirs["cwd"], "/error 401 bad key")
    assert proc.returncode == 1 and proc.stdout.strip() == ""
    assert "401" in proc.stderr and "sk-hidden-key" not in proc.stderr


def test_onedoor_run_rejects_machine_tools_before_running(server, sandbox):
    dirs, env = sandbox
    proc = _onedoor_run(server, env, dirs["cwd"], "-o", "toolsets=terminal", "hi")
    assert proc.returncode == 2 and "allow_machine_tools" in proc.stderr
    assert server.chat_requests() == []


def test_config_file_and_env(server, sandbox):
    dirs, env = sandbox
    (dirs["cwd"] / "onedoor.toml").write_text(textwrap.dedent(f"""
        backend = "hermes"
        [options.hermes]
        model = "fake-model"
        base_url = "{server.base_url}"
    """))
    env = {**env, "ONEDOOR_HERMES_API_KEY": "sk-env-key"}
    proc = subprocess.run([sys.executable, "-m", "onedoor", "run", "hello"], capture_output=True, text=True,
                          timeout=120, env=env, cwd=dirs["cwd"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip("\n") == "You said: hello (turn 1)"
    assert server.chat_requests()[0].headers["authorization"] == "Bearer sk-env-key"


def test_hermes_prints_never_reach_stdout(server, sandbox):
    """hermes print()s a warning at max_iterations; `onedoor run` stdout must stay the reply."""
    dirs, env = sandbox
    proc = _onedoor_run(server, env, dirs["cwd"], "-o", "toolsets=todo", "-o", "max_iterations=1", "--json",
                        '/tool todo {"todos": []}')
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]  # every stdout line is an event
    assert events[-1]["type"] == "run_finished" and events[-1]["stop_reason"] == "max_turns"
    assert "maximum iterations" in proc.stderr
