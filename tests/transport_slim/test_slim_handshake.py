"""A new session is checked before the client uses it (SlimChannel.handshake), so a worker's
refusal is one error, SlimTransportError, whatever the order in which the refusal notice,
the drop and the client's first publish happen. Each order is scripted here on a fake
SLIM session, deterministically (the node tests cover the real thing)."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest
from onedoor_transport_slim.channel import PROBE_PREFIX, SlimChannel, refusal_notice
from onedoor_transport_slim.errors import SlimTransportError

pytestmark = pytest.mark.timeout(30)


class SessionTimeout(Exception):
    """What slim_bindings raises when get_message_async times out (by name)."""


class FakeSession:
    """Incoming payloads (or errors) from a queue; what is published is recorded."""

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[Any] = asyncio.Queue()
        self.published: list[bytes] = []
        self.publish_error: Exception | None = None
        self.answer_probes = False

    async def get_message_async(self, timeout: Any) -> Any:
        try:
            item = await asyncio.wait_for(self.incoming.get(), timeout.total_seconds() if timeout else None)
        except TimeoutError:
            raise SessionTimeout("receive timeout") from None
        if isinstance(item, Exception):
            raise item
        return SimpleNamespace(payload=item)

    async def publish_async(self, data: bytes, *_: Any) -> None:
        if self.publish_error is not None:
            raise self.publish_error
        self.published.append(data)
        message = json.loads(data)
        if self.answer_probes and str(message.get("id", "")).startswith(PROBE_PREFIX):
            self.incoming.put_nowait(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}).encode())


class FakeApp:
    async def delete_session_and_wait_async(self, session: Any) -> None:
        return None


def channel(session: FakeSession) -> SlimChannel:
    return SlimChannel(session, FakeApp(), peer="agntcy/onedoor/agent", client=True, probe_interval=30.0)


DROPPED = RuntimeError("participant disconnected: agntcy/onedoor/agent/1")
GONE = RuntimeError("Session already closed or dropped")


async def test_a_served_session_passes_and_early_messages_are_kept() -> None:
    session = FakeSession()
    session.incoming.put_nowait(b"banner sent before the probe reply")
    session.answer_probes = True
    ch = channel(session)
    await ch.handshake(5)
    assert await ch.recv() == "banner sent before the probe reply"  # the probe reply itself is not
    await ch.close()


async def test_refusal_notice_then_drop() -> None:
    session = FakeSession()
    session.incoming.put_nowait(refusal_notice("this worker requires MLS"))
    session.incoming.put_nowait(DROPPED)
    ch = channel(session)
    with pytest.raises(SlimTransportError, match="refused the session: this worker requires MLS"):
        await ch.handshake(5)
    await ch.close()


async def test_dropped_before_the_first_publish_then_the_notice_arrives() -> None:
    session = FakeSession()
    session.publish_error = GONE  # the worker dropped the session before the client's probe
    ch = channel(session)
    session.incoming.put_nowait(refusal_notice("this worker serves at most 1 sessions at once"))
    with pytest.raises(SlimTransportError, match="refused the session: this worker serves at most 1"):
        await ch.handshake(5)
    await ch.close()


async def test_dropped_without_a_notice_before_the_first_publish() -> None:
    session = FakeSession()
    session.publish_error = GONE
    session.incoming.put_nowait(DROPPED)
    ch = channel(session)
    with pytest.raises(SlimTransportError, match="dropped the session before serving it"):
        await ch.handshake(5)
    await ch.close()


async def test_dropped_without_a_notice_after_the_first_publish() -> None:
    session = FakeSession()
    ch = channel(session)
    handshake = asyncio.ensure_future(ch.handshake(5))
    while not session.published:  # the probe went out; only then does the drop arrive
        await asyncio.sleep(0)
    session.incoming.put_nowait(DROPPED)
    with pytest.raises(SlimTransportError, match="dropped the session before serving it"):
        await handshake
    await ch.close()


async def test_silence_is_a_bounded_transport_error() -> None:
    ch = channel(FakeSession())
    with pytest.raises(SlimTransportError, match="no answer from agntcy/onedoor/agent"):
        await ch.handshake(0.2)
    await ch.close()


async def test_a_worker_side_channel_ignores_a_refusal_notice_from_its_client() -> None:
    session = FakeSession()
    session.incoming.put_nowait(refusal_notice("a client cannot end a worker's session this way"))
    worker_side = SlimChannel(session, FakeApp(), peer="client", probe_interval=30.0)
    assert "session_refused" in await worker_side.recv()  # the door sees it, as any other message
    await worker_side.close()


async def test_bytes_that_are_not_utf8_reach_the_door_for_its_json_policy() -> None:
    from onedoor.wire import WireError, decode_json

    session = FakeSession()
    session.incoming.put_nowait(b'{"text":"\xc3\x28"}')
    session.incoming.put_nowait(b'{"id":"' + PROBE_PREFIX.encode() + b'x","a":' + b"[" * 5000 + b"]" * 5000 + b"}")
    session.incoming.put_nowait(b"after")
    ch = SlimChannel(session, FakeApp(), peer="client", probe_interval=30.0)
    with pytest.raises(WireError) as info:
        decode_json(await ch.recv())
    assert info.value.reason == "not_utf8"  # not silently "repaired" into U+FFFD
    assert (await ch.recv()).startswith('{"id":"onedoor-probe-x"')  # a deep probe look-alike is just a message
    assert await ch.recv() == "after"  # and the reader lives on
    await ch.close()
