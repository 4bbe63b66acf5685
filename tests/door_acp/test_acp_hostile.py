"""The shared hostile corpus against the ACP door: in memory (no transport) and over stdio in
a real `onedoor serve --door acp --transport stdio` process, plus property-based fuzzing of
the door's JSON-RPC layer (see tests/hostile_jsonrpc_support.py for what each case checks).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from acp_harness import onedoor_command  # type: ignore[import-not-found]
from hostile_jsonrpc_support import (
    ChannelDriver,
    StdioDriver,
    acp_open_session,
    acp_prompt,
    acp_rules,
    fuzz_door,
    run_cases,
)
from onedoor.composition import ServeContext
from onedoor.testing import hostile, scripted_kernel, serve_in_memory

pytestmark = pytest.mark.timeout(300)


def _cases(session_id: str, *, line_framed: bool) -> list[hostile.Case]:
    return hostile.all_raw(jsonrpc=True, line_framed=line_framed) + list(hostile.mutations(acp_prompt(session_id)))


def _door_and_ctx(data_dir: Path) -> tuple[Any, ServeContext]:
    from onedoor_door_acp.door import AcpDoor, AcpOptions

    options = AcpOptions(data_dir=str(data_dir))
    return AcpDoor(), ServeContext(kernel=scripted_kernel(delay=0), options={"acp": options}, door_names=["acp"])


async def test_hostile_corpus_in_memory(
    data_dir: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.INFO)
    door, ctx = _door_and_ctx(data_dir)
    async with serve_in_memory(door, ctx) as client:
        driver = ChannelDriver(client)
        cases = _cases(await acp_open_session(driver), line_framed=False)
        tally = await run_cases(driver, cases, acp_rules())
    tally.assert_clean(len(cases))
    shown = [r for r in caplog.records if r.exc_info or hostile.traceback_in(r.getMessage())]
    assert not shown, [f"{r.name}: {r.getMessage()[:200]}" for r in shown]
    assert hostile.traceback_in(capsys.readouterr().err) is None


async def test_hostile_corpus_over_stdio(agent_env: dict[str, str], tmp_path: Path) -> None:
    argv = onedoor_command() + ["serve", "--door", "acp", "--transport", "stdio", "-o", "scripted.delay=0"]
    driver = await StdioDriver.start(argv, tmp_path / "stderr.txt", env=agent_env)
    try:
        cases = _cases(await acp_open_session(driver), line_framed=True)
        tally = await run_cases(driver, cases, acp_rules(line_framed=True))
        code = await driver.finish()
    finally:
        await driver.kill()
    tally.assert_clean(len(cases))
    assert code == 0
    assert "refused a message" in driver.clean_stderr()  # each refusal is logged, in one line


async def test_a_notification_the_library_cannot_read_is_dropped_in_one_line(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``acp`` logs a failing notification with a traceback; the door logs one line instead."""
    door, ctx = _door_and_ctx(data_dir)
    async with serve_in_memory(door, ctx) as client:
        await client.send_json({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": 5}})
        await client.send_json({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}})
        assert "result" in await client.reply_to(1)
    assert not [r for r in caplog.records if r.exc_info]
    assert any("dropped notification session/cancel" in r.getMessage() for r in caplog.records)


def test_fuzzed_json_rpc_layer(data_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Any bytes, any JSON value, anything JSON-RPC-shaped (ACP methods and params naming the
    session included): a correct answer (or none), and the one session goes on."""
    from hypothesis import strategies as st

    def params(values: Any, session_id: str) -> Any:
        fields = {"prompt": values, "cwd": values, "configId": values, "value": values, "modelId": values}
        return values | st.fixed_dictionaries({"sessionId": st.just(session_id) | st.text(max_size=8)}, optional=fields)

    caplog.set_level(logging.INFO)
    methods = ["initialize", "session/new", "session/load", "session/prompt", "session/cancel", "session/list",
               "session/set_config_option", "session/set_model", "session/fork", "session/resume", "$/cancel_request",
               "_vendor/x", "x/y"]
    door, ctx = _door_and_ctx(data_dir)
    fuzz_door(door, ctx, acp_rules(), start=acp_open_session, methods=methods, params=params)
    assert not [r for r in caplog.records if r.exc_info]
