"""Issue 30 for ACP: the editor's model picker offers the backend's models (the ``model``
config option, and the older ``models`` / ``session/set_model``), a switch holds for the
session and comes back with session/load, the next turn runs on the chosen model (seen at
the fake model server), the backend stays a choice; bad switches get clear errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp_harness import JS_DIR, DoorHarness, node_ready, onedoor_command  # type: ignore[import-not-found]
from onedoor import Kernel, plugins
from onedoor.threads.sqlite import SQLiteThreadStore
from onedoor_fake_model_server import fake_model_server

pytestmark = pytest.mark.timeout(120)


def _node(agent: list[str], config: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(["node", "client.mjs", "models", json.dumps(agent), json.dumps(config)],
                         capture_output=True, text=True, env=env, cwd=JS_DIR, timeout=100)
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert lines, f"no output; stderr:\n{out.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert out.returncode == 0 and result.get("ok"), f"{result}\nstderr:\n{out.stderr[-3000:]}"
    return result


def _models_asked(server: Any) -> list[tuple[str, str]]:
    """(the prompt's text, the model asked for) of each chat request the fake server got."""
    out = []
    for request in server.chat_requests():
        users = [m for m in request.messages if m.get("role") == "user"]
        content = users[-1]["content"] if users else ""
        text = content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
        out.append((text, request.model))
    return out


def _option(options: list[dict[str, Any]], option_id: str) -> dict[str, Any] | None:
    return next((o for o in options if o["id"] == option_id), None)


@pytest.mark.skipif(node_ready() is not None, reason=node_ready() or "")
@pytest.mark.parametrize("store", ["sqlite", "none"])
def test_typescript_client_picks_a_model_and_the_next_turn_runs_on_it(
    agent_env: dict[str, str], tmp_path: Path, store: str
) -> None:
    with fake_model_server(models=("a", "b")) as server:
        agent = onedoor_command() + [
            "acp", "--store", store, "-b", "pydantic-ai",
            "-o", f"pydantic-ai.base_url={server.base_url}", "-o", "pydantic-ai.api_key=k",
            "-o", "pydantic-ai.model=a", "-o", "pydantic-ai.models=b", "-o", "pydantic-ai.retries=0",
            "-o", "acp.backends=pydantic-ai,scripted",
        ]
        if store == "sqlite":
            agent += ["-o", f"sqlite.path={tmp_path / 'threads.sqlite3'}"]
        seen = _node(agent, {"phase": "pick"}, agent_env)
        restored = _node(agent, {"phase": "restore", "sid": seen["sid"]}, agent_env)
        asked = _models_asked(server)

    where = f"pydantic-ai, {server.base_url}"
    model = {"id": "model", "name": "Model", "category": "model", "type": "select",
             "description": "which model answers in this session", "currentValue": "a",
             "options": [{"value": "a", "name": "a", "description": where}, {"value": "b", "name": "b", "description": where}]}
    backend = {"id": "backend", "name": "Backend", "category": "_backend", "type": "select",
               "description": "which onedoor backend answers in this session", "currentValue": "pydantic-ai",
               "options": [{"value": "pydantic-ai", "name": "pydantic-ai"}, {"value": "scripted", "name": "scripted"}]}
    assert seen["created"]["configOptions"] == [model, backend]
    assert seen["created"]["models"] == {"currentModelId": "a", "availableModels": [
        {"modelId": "a", "name": "a", "description": where}, {"modelId": "b", "name": "b", "description": where}]}
    assert seen["picked"] == [dict(model, currentValue="b"), backend]
    assert seen["legacy"] == {}
    assert seen["notified"] == [[model, backend]], "session/set_model tells the config option too"
    # each turn ran on the model picked before it (the cancelled one included)
    assert asked == [("first turn", "a"), ("second turn", "b"), ("third turn", "a"), ("/slow 0.05 /long 400 go", "a"),
                     ("last turn", "b"), ("after load", "b")]
    assert seen["stops"] == ["end_turn", "end_turn", "end_turn", "cancelled", "end_turn"]
    bad = seen["bad"]
    for name in ("unknownOption", "unknownLegacy"):
        assert bad[name]["code"] == -32602
        assert "unknown model 'nope' for backend 'pydantic-ai'; choose one of a, b" in bad[name]["message"]
    assert bad["notAString"]["code"] == -32602 and "modelId" in bad["notAString"]["message"]
    assert bad["unknownSession"]["code"] == -32002
    for name in ("whileRunning", "whileRunningLegacy", "backendWhileRunning"):
        assert bad[name]["code"] == -32600 and "a prompt is running in this session" in bad[name]["message"]
    for name in ("noModels", "noModelsLegacy"):
        assert bad[name]["code"] == -32602 and "backend 'scripted' offers no model choice" in bad[name]["message"]
    # the backend stays a choice: a backend without models has no model option; back again, its pick is there
    assert seen["toScripted"] == [dict(backend, currentValue="scripted")]
    assert seen["scripted"] == "You said: scripted turn (2 words, turn 5)", "the conversation so far went along"
    assert seen["back"] == [model, backend], "the model picked for pydantic-ai (a, by session/set_model)"
    # a new agent process: session/load restores the session's model
    assert restored["loaded"] == {"configOptions": [dict(model, currentValue="b"), backend],
                                  "models": dict(seen["created"]["models"], currentModelId="b")}
    assert restored["next"] == "end_turn"


# -- in process: the /model command, fork, a model that cannot run, a picker the backend breaks ------------
def _pydantic_kernel(server: Any, store: Any) -> tuple[Kernel, Any]:
    """A kernel on the pydantic-ai backend (model a, b to switch to) and its options, as `onedoor serve` makes them."""
    backend, options = plugins.make_backend("pydantic-ai", cli={
        "model": "a", "base_url": server.base_url, "api_key": "k", "retries": "0", "models": "b"})
    return Kernel(backend, store=store), options


@pytest.mark.parametrize("kept", ["threads", "door-kept"])
async def test_model_command_fork_and_reload(data_dir: Path, kept: str) -> None:
    store = SQLiteThreadStore(data_dir / "threads.sqlite3") if kept == "threads" else None
    try:
        with fake_model_server(models=("a", "b")) as server:
            kernel, options = _pydantic_kernel(server, store)
            plugin_options = {"pydantic-ai": options}
            async with DoorHarness(kernel, data_dir, plugin_options=plugin_options) as door:
                sid = await door.new_session()
                await door.prompt(sid, "/model")
                assert door.recorder.text() == "Model: a. Available: a, b. Switch with /model ID."
                door.recorder.updates.clear()
                await door.prompt(sid, "/model b")
                assert door.recorder.text() == "Model switched to b."
                assert "config_option_update" in door.recorder.kinds(sid)
                with pytest.raises(RequestError) as err:
                    await door.prompt(sid, "/model c")
                assert err.value.code == -32602 and "unknown model 'c'" in str(err.value)
                await door.prompt(sid, "on b")
                forked = await door.conn.fork_session(session_id=sid, cwd="/tmp", mcp_servers=[])
                assert [o.current_value for o in forked.config_options] == ["b", "pydantic-ai"]
                await door.prompt(forked.session_id, "fork on b")
                await door.conn.set_config_option(config_id="model", session_id=forked.session_id, value="a")
                await door.prompt(forked.session_id, "fork on a")
            async with DoorHarness(kernel, data_dir, plugin_options=plugin_options) as door:
                loaded = await door.conn.load_session(session_id=sid, cwd="/tmp", mcp_servers=[])
                assert loaded.config_options[0].id == "model" and loaded.config_options[0].current_value == "b"
                await door.prompt(sid, "reloaded on b")
            asked = _models_asked(server)
    finally:
        if store is not None:
            await store.close()
    assert asked == [("on b", "b"), ("fork on b", "b"), ("fork on a", "a"), ("reloaded on b", "b")]


async def test_a_model_that_cannot_run_is_refused_and_the_session_goes_on(data_dir: Path, monkeypatch: Any) -> None:
    """with_model checks a switch as at start-up: here another provider whose key has gone."""
    from onedoor_backend_pydantic_ai import PydanticAIOptions

    with fake_model_server() as server:
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "there while the options are made")
        options = PydanticAIOptions(model="openai-chat:fake-model", models=["anthropic:claude-x"], retries=0)
        backend, _ = plugins.make_backend("pydantic-ai", cli={"model": "openai-chat:fake-model", "retries": "0"})
        monkeypatch.delenv("ANTHROPIC_API_KEY")
        async with DoorHarness(Kernel(backend), data_dir, plugin_options={"pydantic-ai": options}) as door:
            sid = await door.new_session()
            with pytest.raises(RequestError) as err:
                await door.conn.set_config_option(config_id="model", session_id=sid, value="anthropic:claude-x")
            assert err.value.code == -32602
            assert "cannot be used" in str(err.value) and "ANTHROPIC_API_KEY" in str(err.value)
            response = await door.conn.set_config_option(config_id="backend", session_id=sid, value="pydantic-ai")
            assert response.config_options[0].current_value == "openai-chat:fake-model", "the refused pick was not kept"
            assert (await door.prompt(sid, "still here")).stop_reason == "end_turn"
        assert _models_asked(server) == [("still here", "fake-model")]


async def test_a_backend_that_fails_to_list_its_models_has_no_picker(data_dir: Path, caplog: Any) -> None:
    from onedoor import Backend
    from onedoor.testing import scripted_kernel

    def broken(options: Any = None) -> Any:
        raise AssertionError("the door never builds this backend")

    def models(options: Any) -> Any:
        raise RuntimeError("boom")

    broken.models = models  # type: ignore[attr-defined]
    broken.with_model = lambda options, model_id: options  # type: ignore[attr-defined]
    kernel = Kernel(Backend("broken-models", scripted_kernel(reasoning=False, tool=False).backend.factory))
    plugins.add_in_process_plugin("backend", "broken-models", broken)
    try:
        async with DoorHarness(kernel, data_dir, plugin_options={"broken-models": object()}, backends="broken-models") as door:
            response = await door.conn.new_session(cwd="/tmp", mcp_servers=[])
            assert [o.id for o in response.config_options] == ["backend"]
            with pytest.raises(RequestError) as err:
                await door.conn.set_config_option(config_id="model", session_id=response.session_id, value="x")
            assert err.value.code == -32602 and "offers no model choice" in str(err.value)
            assert (await door.prompt(response.session_id, "fine")).stop_reason == "end_turn"
    finally:
        plugins.remove_in_process_plugin("backend", "broken-models")
    assert "backend 'broken-models' could not list its models: boom" in caplog.text


async def test_a_session_whose_backend_is_no_longer_a_choice_still_loads(data_dir: Path) -> None:
    from onedoor.testing import scripted_kernel

    if "echo" not in plugins.names("backend"):
        pytest.skip("the example backend 'echo' (examples/backend-echo) is not installed")
    async with DoorHarness(scripted_kernel(reasoning=False, tool=False), data_dir, backends="scripted,echo") as door:
        sid = await door.new_session()
        await door.conn.set_config_option(config_id="backend", session_id=sid, value="echo")
    async with DoorHarness(scripted_kernel(reasoning=False, tool=False), data_dir, backends="scripted") as door:
        loaded = await door.conn.load_session(session_id=sid, cwd="/tmp", mcp_servers=[])
        assert [(o.id, o.current_value) for o in loaded.config_options] == [("backend", "echo")]
        with pytest.raises(RequestError) as err:
            await door.prompt(sid, "hi")
        assert err.value.code == -32602 and "unknown backend 'echo'" in str(err.value)
        await door.conn.set_config_option(config_id="backend", session_id=sid, value="scripted")
        assert (await door.prompt(sid, "hi")).stop_reason == "end_turn"
