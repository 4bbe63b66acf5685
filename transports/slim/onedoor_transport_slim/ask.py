"""`onedoor ask --transport slim NAME "message"`: an MCP client over SLIM.

Calls the door's ``ask`` tool with a progress token and writes the progress text (the
reply as it is written) to stdout; the final result is printed only if nothing
streamed. A failed or cancelled call exits 1; a SLIM problem exits 2 with one line.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from .options import SlimOptions, resolve_secret


def _write(fd: int, text: str) -> None:
    data = text.encode("utf-8")
    while data:
        data = data[os.write(fd, data) :]


async def ask(name: str, message: str, options: SlimOptions, *, out_fd: int, timeout: float = 600.0) -> int:
    try:
        from mcp import ClientSession
        from onedoor_door_mcp.client import mcp_streams as _codec  # noqa: F401 - checks it is installed
    except ImportError:
        print(
            "onedoor ask: the MCP client needs the MCP door and the `mcp` package: "
            "pip install 'onedoor-transport-slim[ask]'",
            file=sys.stderr,
        )
        return 2
    from .client import client_options, mcp_streams, mcp_timeout, open_channel
    from .errors import SlimTransportError

    streamed = False

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        nonlocal streamed
        if message:  # the next piece of the reply
            streamed = True
            _write(out_fd, message)

    secret = resolve_secret(options)
    async with open_channel(name, options=client_options(options), secret=secret) as channel:
        try:
            async with mcp_streams(channel) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=mcp_timeout(timeout)) as session:
                    await session.initialize()
                    tools = await session.list_tools()
                    if not any(t.name == "ask" for t in tools.tools):
                        names = ", ".join(t.name for t in tools.tools) or "none"
                        print(f"onedoor ask: {name} has no 'ask' tool (tools: {names})", file=sys.stderr)
                        return 2
                    result = await session.call_tool("ask", {"message": message}, progress_callback=on_progress)
        except BaseException:
            if channel.error:  # say why the session ended rather than the SDK's "Connection closed"
                raise SlimTransportError(channel.error) from None
            raise
    text = "".join(getattr(block, "text", "") for block in result.content)
    if getattr(result, "is_error", None) or getattr(result, "isError", False):
        if streamed:
            _write(out_fd, "\n")
        print(f"onedoor ask: {text}", file=sys.stderr)
        return 1
    _write(out_fd, "\n" if streamed else text + "\n")
    return 0


def run_ask(name: str, message: str, options: Any, *, timeout: float = 600.0) -> int:
    from onedoor import OnedoorError

    from .bindings import protect_stdout

    out_fd = protect_stdout()  # SLIM's native logs must not mix with the reply
    try:
        return asyncio.run(ask(name, message, options, out_fd=out_fd, timeout=timeout))
    except OnedoorError as exc:
        print(f"onedoor ask: {exc}", file=sys.stderr)
        return 2
    except BaseException as exc:  # noqa: BLE001 - task groups wrap the real error
        inner = _root_cause(exc)
        if isinstance(inner, (KeyboardInterrupt, SystemExit)):
            raise inner from None
        print(f"onedoor ask: {type(inner).__name__}: {inner}", file=sys.stderr)
        return 2


def _root_cause(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
