"""Options of the pydantic-ai backend: flags, env, onedoor.toml, clear errors, no secrets shown."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from onedoor.errors import OptionsError
from onedoor.plugins.options import parse_options, redacted
from onedoor.plugins.serve import kernel_for
from onedoor_backend_pydantic_ai import PydanticAIOptions, pydantic_ai_backend
from onedoor_test_support import free_port


def parse(cli=None, file=None, environ=None):
    return parse_options(PydanticAIOptions, "pydantic-ai", cli=cli, file=file, environ=environ or {})




def test_needs_a_model_or_an_agent():
    with pytest.raises(OptionsError, match="name a model"):
        parse()


def test_base_url_with_an_agent_needs_a_model():
    with pytest.raises(OptionsError, match="base_url applies to model"):
        parse({"agent": "x:y", "base_url": "http://127.0.0.1:9/v1"})


def test_unknown_option_names_the_known_ones():
    with pytest.raises(OptionsError, match=r"unknown option 'modle'.*known options: .*model"):
        parse({"modle": "x"})


def test_missing_key_is_reported(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(OptionsError, match="missing key .*OPENAI_API_KEY"):
        parse({"model": "openai:gpt-4o"})


def test_model_without_provider_needs_base_url():
    with pytest.raises(OptionsError, match="names no provider"):
        parse({"model": "gpt-4o"})


def test_bad_agent_target_and_bad_url():
    with pytest.raises(OptionsError, match="module:attribute"):
        parse({"agent": "justamodule"})
    with pytest.raises(OptionsError, match="http"):
        parse({"model": "m", "base_url": "ftp://x"})
    with pytest.raises(OptionsError, match="whole number"):
        parse({"model": "m", "base_url": "http://127.0.0.1:1/v1", "retries": "many"})


def test_preflight_reports_an_unreachable_endpoint():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(OptionsError, match="unreachable endpoint"):
        parse({"model": "m", "base_url": url, "preflight": "true"})
    parse({"model": "m", "base_url": url})  # without preflight, nothing is contacted


def test_preflight_passes_on_a_live_endpoint(server):
    opts = parse({"model": "fake-model", "base_url": server.base_url, "preflight": "1"})
    assert opts.preflight and [r.path for r in server.requests] == ["/v1/models"]


def test_env_and_file_sources_and_precedence(server):
    env = {"ONEDOOR_PYDANTIC_AI_MODEL": "from-env", "ONEDOOR_PYDANTIC_AI_API_KEY": "sk-env"}
    opts = parse(cli={"base_url": server.base_url}, file={"model": "from-file", "retries": 5}, environ=env)
    assert (opts.model, opts.api_key, opts.retries) == ("from-env", "sk-env", 5)
    opts = parse(cli={"model": "from-cli", "base_url": server.base_url}, environ=env)
    assert opts.model == "from-cli"


def test_secret_is_redacted():
    opts = PydanticAIOptions(model="m", base_url="http://127.0.0.1:9/v1", api_key="sk-very-secret")
    shown = redacted(opts)
    assert shown["api_key"] == "***" and "sk-very-secret" not in repr(shown)


def test_kernel_for_validates_before_any_run(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(OptionsError, match="missing key"):
        kernel_for("pydantic-ai", ["model=openai:gpt-4o"])


def test_factory_declares_options_and_capabilities():
    assert pydantic_ai_backend.Options is PydanticAIOptions
    assert {"tools", "client_tools"} <= pydantic_ai_backend.capabilities


def test_entry_point_module_is_light():
    code = textwrap.dedent("""
        import sys
        import onedoor_backend_pydantic_ai
        heavy = [m for m in ("pydantic_ai", "openai", "httpx") if m in sys.modules]
        print(heavy)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_agent_from_module_attribute(server, tmp_path, monkeypatch):
    (tmp_path / "my_pa_agent_mod.py").write_text(textwrap.dedent("""
        import os
        from openai import AsyncOpenAI
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        def build():
            client = AsyncOpenAI(base_url=os.environ["MY_FAKE_URL"], api_key="k", max_retries=0)
            return Agent(OpenAIChatModel("fake-model", provider=OpenAIProvider(openai_client=client)))

        agent = build()
        not_an_agent = 42
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MY_FAKE_URL", server.base_url)
    from onedoor.testing import check_backend

    for target in ("my_pa_agent_mod:agent", "my_pa_agent_mod:build"):
        report = check_backend(lambda t=target: pydantic_ai_backend(PydanticAIOptions(agent=t)), "hi")
        assert report.ok, report.problems
        assert report.outcome.text == "You said: hi (turn 1)"
    with pytest.raises(OptionsError, match="is int, not a pydantic-ai Agent"):
        parse({"agent": "my_pa_agent_mod:not_an_agent"})
    with pytest.raises(OptionsError, match="has no attribute 'nope'"):
        parse({"agent": "my_pa_agent_mod:nope"})
    with pytest.raises(OptionsError, match="cannot import 'no_such_mod_xyz'"):
        parse({"agent": "no_such_mod_xyz:agent"})


def test_cli_run_json_end_to_end(server, tmp_path):
    """`onedoor run --json` in a subprocess, options from onedoor.toml and the environment."""
    (tmp_path / "onedoor.toml").write_text(textwrap.dedent(f"""
        backend = "pydantic-ai"
        [options.pydantic-ai]
        model = "fake-model"
        base_url = "{server.base_url}"
        retries = 0
    """))
    env = {**os.environ, "ONEDOOR_PYDANTIC_AI_API_KEY": "sk-from-env"}
    proc = subprocess.run(
        [sys.executable, "-m", "onedoor", "run", "--json", "/think hello"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    import json

    events = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert "reasoning_delta" in kinds and kinds.count("text_delta") > 3
    assert events[-1]["text"] == "You said: hello (turn 1)"
    assert server.chat_requests()[0].headers["authorization"] == "Bearer sk-from-env"
    assert "sk-from-env" not in proc.stdout + proc.stderr


def test_cli_reports_a_provider_error(server):
    proc = subprocess.run(
        [sys.executable, "-m", "onedoor", "run", "-b", "pydantic-ai", "-o", "model=fake-model",
         "-o", f"base_url={server.base_url}", "-o", "api_key=sk-hidden", "-o", "retries=0", "/error 401 bad key"],
        capture_output=True, text=True, timeout=90,
    )
    assert proc.returncode == 1
    assert "HTTP 401" in proc.stderr and "sk-hidden" not in proc.stderr + proc.stdout


def test_cli_rejects_bad_options_before_running():
    proc = subprocess.run(
        [sys.executable, "-m", "onedoor", "run", "-b", "pydantic-ai", "-o", "model=m", "-o", "base_url=http://127.0.0.1:9/v1",
         "-o", "colour=blue", "hi"],
        capture_output=True, text=True, timeout=90,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("onedoor: error: unknown option 'colour'") and "Traceback" not in proc.stderr


def test_serve_refuses_an_unreachable_endpoint_before_starting():
    pytest.importorskip("onedoor_door_rest", reason="the REST door (plugins/door-rest) is not installed")
    url = f"http://127.0.0.1:{free_port()}/v1"
    proc = subprocess.run(
        [sys.executable, "-m", "onedoor", "serve", "--door", "rest", "--port", "0", "-b", "pydantic-ai",
         "-o", "model=m", "-o", f"base_url={url}", "-o", "preflight=true"],
        capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr
    assert "unreachable endpoint" in proc.stderr and proc.stdout == ""
