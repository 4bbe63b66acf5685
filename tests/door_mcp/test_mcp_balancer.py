"""MCP 2025-11-25 sessions through a real HAProxy in front of two door servers, with the
documented configuration (docs/deploy/haproxy-mcp.cfg): round robin spreads the sessions
over both servers, and every request of a session reaches the server that made it, so
elicitation and every call work. Each server names itself in ``initialize``
(``mcp.server_name``), which tells the test where a session went."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from onedoor_test_support import free_port, wait_for_port

pytestmark = pytest.mark.timeout(180)
TEMPLATE = Path(__file__).parents[2] / "docs" / "deploy" / "haproxy-mcp.cfg"


def haproxy() -> str | None:
    return shutil.which("haproxy") or (("/usr/sbin/haproxy") if Path("/usr/sbin/haproxy").exists() else None)


@pytest.fixture
def balanced(start_http_server: Any, tmp_path: Path) -> Any:
    binary = haproxy()
    if binary is None:
        pytest.skip("haproxy is not installed (Debian: apt-get install haproxy)")
    servers = [start_http_server("-o", "scripted.delay=0", "-o", f"mcp.server_name=s{i}") for i in (1, 2)]
    port = free_port()
    lines = "\n".join(f"    server s{i} 127.0.0.1:{urlsplit(s.base).port} check" for i, s in enumerate(servers, 1))
    config = tmp_path / "haproxy.cfg"
    config.write_text(TEMPLATE.read_text("utf-8").replace("{{PORT}}", str(port)).replace("{{SERVERS}}", lines))
    proc = subprocess.Popen([binary, "-f", str(config), "-db"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_port(port, what="haproxy")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


async def test_sessions_stick_to_their_server(balanced: str) -> None:
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def person(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content={"decision": "allow_once"})

    seen: list[str] = []
    for index in range(4):
        async with streamable_http_client(balanced) as streams:
            async with ClientSession(streams[0], streams[1], elicitation_callback=person) as session:
                init = await session.initialize()
                seen.append(init.server_info.name if hasattr(init, "server_info") else init.serverInfo.name)
                for message, reply in ((f"/ask rm{index} {{}}", f"Approved (allow_once): ran rm{index}"),
                                       ("hello", "You said: hello (1 word, turn 1)")):
                    result = await session.call_tool("ask", {"message": message})
                    assert result.content[0].text == reply
    assert sorted(set(seen)) == ["s1", "s2"], seen  # round robin spread the sessions
