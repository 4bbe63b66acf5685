"""The terminal door's /attach over a channel that is not this terminal (a remote terminal on
SLIM): the file would be read from the server's disk, so it is refused; the chat goes on."""

from __future__ import annotations

from pathlib import Path

from onedoor.builtins.scripted_extras import DOT_PNG
from onedoor.builtins.terminal_door import TerminalDoor
from onedoor.composition import ServeContext
from onedoor.testing import scripted_kernel, serve_in_memory


async def read_until(client, needle: str) -> str:
    seen = ""
    for _ in range(200):  # bounded: the door answers a line in a few messages
        message = await client.recv()
        assert message is not None, seen
        seen += message
        if needle in seen:
            return seen
    raise AssertionError(f"{needle!r} never came: {seen!r}")


async def test_a_remote_terminal_cannot_attach_the_servers_files(tmp_path: Path) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(DOT_PNG)
    ctx = ServeContext(kernel=scripted_kernel(), door_names=["terminal"], transport_name="slim")
    async with serve_in_memory(TerminalDoor(), ctx, peer="slim") as client:
        await read_until(client, "> ")
        await client.send(f"/attach {secret}")
        shown = await read_until(client, "> ")
        assert "[/attach works in a local terminal only" in shown and "attached" not in shown.replace("/attach", "")
        await client.send("hello")
        reply = await read_until(client, "turn 1)")
        assert "Received" not in reply and "You said: hello" in reply
