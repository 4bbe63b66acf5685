"""onedoor.testing's in-memory channel pair behaves like a transport's channel."""

from __future__ import annotations

import asyncio

import pytest
from onedoor.composition import Channel, ChannelClosed, MessageTooLarge
from onedoor.testing import channel_pair, serve_in_memory


async def test_messages_cross_in_order_and_close_ends_both_sides() -> None:
    door_end, client = channel_pair()
    assert isinstance(door_end, Channel) and isinstance(client, Channel)
    await client.send("one")
    await client.send_json({"two": 2})
    await door_end.send("back")
    assert [await door_end.recv(), await door_end.recv()] == ["one", '{"two": 2}']
    assert await client.recv() == "back"
    await client.send("last words")
    await client.close()
    assert await door_end.recv() == "last words"  # what was sent before the close still arrives
    assert await door_end.recv() is None
    with pytest.raises(ChannelClosed):
        await door_end.send("anyone?")
    assert await client.recv() is None


async def test_a_transports_habits() -> None:
    door_end, client = channel_pair(max_message_bytes=10, line_framed=True)
    await client.send("x" * 11)
    with pytest.raises(MessageTooLarge):
        await door_end.recv()
    await client.send_bytes(b"\xff ok")  # not UTF-8: arrives as surrogateescape text
    assert await door_end.recv() == "\udcff ok"
    with pytest.raises(AssertionError, match="line break"):
        await door_end.send("two\nlines")
    with pytest.raises(UnicodeEncodeError):  # a real transport could not write this either
        await door_end.send("half an emoji \ud83d")
    door_end.inject(RuntimeError("transport broke"))
    with pytest.raises(RuntimeError):
        await door_end.recv()


async def test_serve_in_memory_waits_for_the_door_and_reports_one_that_does_not_end() -> None:
    class Echo:
        name = "echo"

        async def serve_channel(self, channel: Channel, ctx: object) -> None:
            while (message := await channel.recv()) is not None:
                await channel.send(message.upper())

    async with serve_in_memory(Echo(), None) as client:
        await client.send("hi")
        assert await client.recv() == "HI"

    class Stuck:
        name = "stuck"

        async def serve_channel(self, channel: Channel, ctx: object) -> None:
            await asyncio.Event().wait()

    with pytest.raises(AssertionError, match="'stuck' did not end"):
        async with serve_in_memory(Stuck(), None, timeout=0.1):
            pass
