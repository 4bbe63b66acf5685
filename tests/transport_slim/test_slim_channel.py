"""The SLIM transport as a channel: sessions, security defaults and failures, with a node
and workers in separate processes on a unix socket."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from slim_harness import SECRET, cli

pytest.importorskip("slim_bindings")

from onedoor.composition import ChannelClosed
from onedoor.errors import OptionsError
from onedoor_transport_slim.client import SlimClient, open_channel
from onedoor_transport_slim.errors import SlimTransportError
from onedoor_transport_slim.options import SlimOptions, resolve_secret


async def test_echo_round_trip_and_many_concurrent_sessions(node_cluster):
    worker = node_cluster.worker("echo")
    client = await SlimClient(node_cluster.options(), SECRET).connect()
    try:
        channels = await asyncio.gather(*(client.open() for _ in range(8)))

        async def talk(index, channel):
            replies = []
            for turn in range(3):
                await channel.send(f"m{index}-{turn}")
                replies.append(await asyncio.wait_for(channel.recv(), 10))
            return replies

        results = await asyncio.gather(*(talk(i, ch) for i, ch in enumerate(channels)))
        for index, replies in enumerate(results):
            assert replies == [f"echo:m{index}-{turn}" for turn in range(3)]
        await channels[0].send("pid")
        assert await asyncio.wait_for(channels[0].recv(), 10) == str(worker.pid)
        for channel in channels:
            await channel.close()
            assert await channel.recv() is None
    finally:
        await client.close()
    assert worker.wait_count(" opened", 8) == 8  # each session logged on stderr
    assert worker.wait_count(" closed", 8) == 8
    assert worker.stdout() == ""  # stdout stays clean: native logs go to stderr


async def test_oversized_message_is_refused_and_the_session_goes_on(node_cluster):
    node_cluster.worker("echo", "-o", "max_message_bytes=1000")
    async with open_channel(options=node_cluster.options()) as channel:
        await channel.send("x" * 5000)
        assert await asyncio.wait_for(channel.recv(), 10) == "too-large"
        await channel.send("small")
        assert await asyncio.wait_for(channel.recv(), 10) == "echo:small"


async def test_terminal_door_over_slim(node_cluster):
    node_cluster.worker("terminal")
    async with open_channel(options=node_cluster.options()) as channel:
        banner = await asyncio.wait_for(channel.recv(), 10)
        assert "onedoor chat" in banner
        await channel.send("hello over slim")
        seen = ""
        for _ in range(200):
            seen += await asyncio.wait_for(channel.recv(), 10)
            if "hello over slim" in seen and seen.endswith("> "):
                break
        assert "hello over slim" in seen


async def test_worker_without_mls_is_refused_by_default(node_cluster):
    """The refusal is the transport's own error, raised by open: the client checks a new
    session before handing it out, so no send or recv can race the worker's refusal."""
    worker = node_cluster.worker("echo")
    with pytest.raises(SlimTransportError, match="refused the session: this worker requires MLS"):
        async with open_channel(options=node_cluster.options(mls=False)):
            pytest.fail("a refused session was handed out")
    worker.wait_for("refused a session without MLS", timeout=10)
    async with open_channel(options=node_cluster.options()) as channel:  # the worker goes on
        await channel.send("with MLS")
        assert await asyncio.wait_for(channel.recv(), 10) == "echo:with MLS"


async def test_a_worker_at_max_sessions_refuses_with_the_transport_error(node_cluster):
    node_cluster.worker("echo", "-o", "max_sessions=1")
    async with open_channel(options=node_cluster.options()) as first:
        await first.send("one")
        assert await asyncio.wait_for(first.recv(), 10) == "echo:one"
        with pytest.raises(SlimTransportError, match="at most 1 sessions"):
            async with open_channel(options=node_cluster.options()):
                pytest.fail("a refused session was handed out")
        await first.send("still")  # the open session is not disturbed
        assert await asyncio.wait_for(first.recv(), 10) == "echo:still"


async def test_mls_off_only_when_both_sides_say_so(node_cluster):
    node_cluster.worker("echo", "-o", "mls=false")
    async with open_channel(options=node_cluster.options(mls=False)) as channel:
        await channel.send("plain")
        assert await asyncio.wait_for(channel.recv(), 10) == "echo:plain"


async def test_wrong_secret_fails_in_bounded_time_with_a_clear_error(node_cluster):
    node_cluster.worker("echo")
    wrong = "w" * 40
    with pytest.raises(SlimTransportError) as info:
        async with open_channel(options=node_cluster.options(secret=wrong), secret=wrong):
            pass
    assert "secret differs" in str(info.value)
    assert wrong not in str(info.value)


def test_short_or_missing_secret_is_refused_before_starting(tmp_path):
    with pytest.raises(OptionsError, match="at least 32"):
        resolve_secret(SlimOptions(secret="short"))
    with pytest.raises(OptionsError, match="shared secret"):
        resolve_secret(SlimOptions())
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    assert resolve_secret(SlimOptions(secret_file=str(secret_file))) == SECRET
    env = {**os.environ, "ONEDOOR_SLIM_SECRET": "too-short"}
    done = subprocess.run(
        cli("serve", "--door", "echo", "--transport", "slim", "-o", f"endpoint=unix://{tmp_path}/none.sock"),
        env=env, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2
    assert "at least 32" in done.stderr
    assert "too-short" not in done.stderr + done.stdout


def test_bad_name_and_endpoint_are_option_errors():
    with pytest.raises(OptionsError, match="org/namespace/agent"):
        SlimOptions(name="just-a-name")
    with pytest.raises(OptionsError, match="unix://"):
        SlimOptions(endpoint="tcp://1.2.3.4:5")


async def test_dead_node_fails_fast(tmp_path):
    # No socket at all.
    options = SlimOptions(endpoint=f"unix://{tmp_path}/missing.sock", secret=SECRET, connect_attempts=2, connect_timeout=1.0)
    with pytest.raises(SlimTransportError, match="no SLIM node"):
        async with open_channel(options=options):
            pass
    # A stale socket file nobody listens on.
    import socket

    path = tmp_path / "stale.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()
    options = SlimOptions(endpoint=f"unix://{path}", secret=SECRET, connect_attempts=2, connect_timeout=1.0)
    with pytest.raises(SlimTransportError, match="nothing listens on the socket"):
        async with open_channel(options=options):
            pass
    # A TCP port nobody listens on: held (bound, not listening) for the whole check, so no
    # other process can take it meanwhile and connections to it are refused.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        endpoint = f"http://127.0.0.1:{port}"
        options = SlimOptions(endpoint=endpoint, secret=SECRET, connect_attempts=2, connect_timeout=1.0)
        with pytest.raises(SlimTransportError, match="no SLIM node at http://127.0.0.1"):
            async with open_channel(options=options):
                pass


def test_worker_with_dead_node_exits_with_a_clear_error(tmp_path):
    env = {**os.environ, "ONEDOOR_SLIM_SECRET": SECRET}
    done = subprocess.run(
        cli("serve", "--door", "echo", "--transport", "slim", "-o", f"endpoint=unix://{tmp_path}/none.sock"),
        env=env, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "no SLIM node" in done.stderr and "onedoor slim-node" in done.stderr


async def test_killed_worker_ends_the_session_with_an_error_and_others_go_on(node_cluster):
    first = node_cluster.worker("echo")
    second = node_cluster.worker("echo")
    client = await SlimClient(node_cluster.options(), SECRET).connect()
    try:
        on: dict[int, object] = {}
        spare = []
        for _ in range(12):  # open sessions until each worker holds one
            channel = await client.open()
            await channel.send("pid")
            pid = int(await asyncio.wait_for(channel.recv(), 10))
            if pid in on:
                spare.append(channel)
            else:
                on[pid] = channel
            if len(on) == 2:
                break
        assert set(on) == {first.pid, second.pid}
        first.kill()
        doomed, survivor = on[first.pid], on[second.pid]
        assert await asyncio.wait_for(doomed.recv(), 30) is None  # probe unanswered: the session ends
        assert "stopped answering" in (doomed.error or "")
        with pytest.raises(ChannelClosed, match="stopped answering"):
            await doomed.send("anyone?")
        await survivor.send("still here")  # the other worker's session is unaffected
        assert await asyncio.wait_for(survivor.recv(), 10) == "echo:still here"
        for channel in [doomed, survivor, *spare]:
            await channel.close()
    finally:
        await client.close()
    for _ in range(3):
        async with open_channel(options=node_cluster.options()) as channel:
            await channel.send("new session")
            assert await asyncio.wait_for(channel.recv(), 10) == "echo:new session"


async def test_embedded_node_and_clean_shutdown(cluster):
    worker = cluster.worker("echo", "-o", "embed_node=true")
    async with open_channel(options=cluster.options()) as channel:
        await channel.send("hi")
        assert await asyncio.wait_for(channel.recv(), 10) == "echo:hi"
    assert worker.stop() == 0
    assert "stopped" in worker.text()
    assert worker.stdout() == ""
    assert not (cluster.root / "node.sock").exists()  # the embedded node cleaned up its socket


def test_slim_node_stops_on_sigterm_and_removes_its_socket(node_cluster):
    assert node_cluster.node.stop() == 0
    assert "stopped" in node_cluster.node.text()
    assert not (node_cluster.root / "node.sock").exists()


def test_slim_node_refuses_a_second_node_on_the_same_socket(node_cluster):
    env = {**os.environ}
    done = subprocess.run(
        cli("slim-node", "--endpoint", node_cluster.endpoint), env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "already listens" in done.stderr
    assert node_cluster.node.popen.poll() is None


def test_plugin_module_is_light():
    code = (
        "import sys, onedoor_transport_slim, onedoor_transport_slim.cli_commands;"
        "print(sorted(m for m in ('slim_bindings', 'mcp', 'anyio') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.strip()
    assert out == "[]"


def test_worker_stops_with_a_clear_error_when_its_node_dies(node_cluster):
    worker = node_cluster.worker("echo")
    node_cluster.node.kill()
    assert worker.popen.wait(30) == 1
    assert "lost the SLIM node" in worker.text()
    assert worker.stdout() == ""
