"""With MLS on, the node relays ciphertext only: the node process runs under strace and
none of its writes carry the message. The same check with MLS off finds the message,
so the capture itself is proven to work."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import uuid

import pytest
from onedoor_test_support import await_for

pytest.importorskip("slim_bindings")

from onedoor_transport_slim.client import open_channel


def _strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    return subprocess.run(["strace", "-o", "/dev/null", "true"], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(
    not _strace_works(), reason="needs strace with ptrace allowed (apt-get install -y strace)"
)


async def test_node_traffic_carries_no_plaintext_with_mls(cluster):
    trace = cluster.root / "node.strace"
    cluster.start_node(
        wrapper=["strace", "-f", "-qq", "-s", "1000000", "-e", "trace=write,writev,sendmsg,sendto,sendmmsg", "-o", str(trace)]
    )
    cluster.worker("echo")
    cluster.worker("echo", "-o", "name=agntcy/onedoor/plain", "-o", "mls=false")
    secret_text = f"TOP-SECRET-{uuid.uuid4().hex}"
    plain_text = f"IN-THE-CLEAR-{uuid.uuid4().hex}"
    async with open_channel(options=cluster.options()) as channel:
        await channel.send(secret_text)
        assert await asyncio.wait_for(channel.recv(), 20) == f"echo:{secret_text}"
    async with open_channel("agntcy/onedoor/plain", options=cluster.options(mls=False, name="agntcy/onedoor/plain")) as channel:
        await channel.send(plain_text)
        assert await asyncio.wait_for(channel.recv(), 20) == f"echo:{plain_text}"
    # strace writes as the node goes: the capture must show the relayed plain message ...
    await await_for(lambda: plain_text in trace.read_text(errors="replace"), "the plain message in the strace", 20)
    assert secret_text not in trace.read_text(errors="replace")  # ... but never an MLS-protected one
