"""The shared hostile corpus over SLIM: MCP and ACP workers in their own processes, every
case one SLIM message on one session per door (sessions are slow to open), judged as in
tests/hostile_jsonrpc_support.py. The session must survive every case, the worker must
log each refusal in one line and no traceback, and stdout must stay empty."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytest.importorskip("slim_bindings")

from hostile_jsonrpc_support import (
    MCP_TOOL_CALL,
    ChannelDriver,
    acp_open_session,
    acp_prompt,
    acp_rules,
    mcp_handshake,
    mcp_rules,
    run_cases,
)
from onedoor import plugins
from onedoor.testing import hostile
from onedoor_transport_slim.client import open_channel

pytestmark = pytest.mark.timeout(300)


def _check_worker(worker: Any) -> None:
    assert worker.stop() == 0
    log = worker.text()
    assert hostile.traceback_in(log) is None, log[-3000:]
    assert "refused a message" in log  # each refusal logged, in one line
    assert re.search(r"session with \S+ failed", log) is None, log[-3000:]  # no session failed
    assert worker.stdout() == ""


@pytest.mark.skipif("mcp" not in plugins.names("door"), reason="the MCP door (onedoor-door-mcp) is not installed")
async def test_hostile_corpus_against_mcp_over_slim(node_cluster) -> None:
    worker = node_cluster.worker("mcp", "-o", "scripted.delay=0")
    cases = hostile.all_raw(jsonrpc=True) + list(hostile.mutations(MCP_TOOL_CALL))
    async with open_channel(options=node_cluster.options()) as channel:
        driver = ChannelDriver(channel)
        await mcp_handshake(driver)
        tally = await run_cases(driver, cases, mcp_rules())
    tally.assert_clean(len(cases))
    _check_worker(worker)


@pytest.mark.skipif("acp" not in plugins.names("door"), reason="the ACP door (onedoor-door-acp) is not installed")
async def test_hostile_corpus_against_acp_over_slim(node_cluster, tmp_path) -> None:
    worker = node_cluster.worker("acp", "-o", "scripted.delay=0", env={"ONEDOOR_DATA_DIR": str(tmp_path / "data")})
    async with open_channel(options=node_cluster.options()) as channel:
        driver = ChannelDriver(channel)
        cases = hostile.all_raw(jsonrpc=True) + list(hostile.mutations(acp_prompt(await acp_open_session(driver))))
        tally = await run_cases(driver, cases, acp_rules())
    tally.assert_clean(len(cases))
    _check_worker(worker)
