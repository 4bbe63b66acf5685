"""A SLIM point-to-point session as a onedoor Channel: one whole message per publish.

A reader task pulls messages into a queue. SLIM does not tell a session that its peer
died, so after ``probe_interval`` seconds of silence the reader sends a JSON-RPC
``ping`` request whose id starts with ``onedoor-probe-``; any message from the peer
proves it alive, and silence for ``probe_timeout`` more seconds ends the session. Probe
requests and their replies are answered and dropped here: doors never see them, and
other MCP-over-SLIM peers answer ``ping`` themselves (any JSON-RPC peer at least answers
with an error, which is just as good a sign of life).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from onedoor.composition import ChannelClosed, MessageTooLarge

from .runtime import describe_error, seconds

PROBE_PREFIX = "onedoor-probe-"
_PROBE_MARK = PROBE_PREFIX.encode()
_ids = itertools.count(1)


def _is_timeout(exc: BaseException) -> bool:
    return "Timeout" in type(exc).__name__ or "timeout" in describe_error(exc).lower()


class SlimChannel:
    """One SLIM session, whole messages in and out."""

    def __init__(
        self,
        session: Any,
        app: Any,
        *,
        peer: str,
        max_message_bytes: int = 16 * 1024 * 1024,
        probe_interval: float = 30.0,
        probe_timeout: float = 10.0,
    ) -> None:
        self.session = session
        self.peer = peer
        self.error: str | None = None  # why the session ended, if not by a close
        self._app = app
        self._limit = max_message_bytes
        self._probe_interval = probe_interval
        self._probe_timeout = probe_timeout
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._send_lock = asyncio.Lock()
        self._closed = False
        self._ended = False
        self._reader = asyncio.create_task(self._read(), name=f"slim-reader-{peer}")

    # -- reading ---------------------------------------------------------------

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        probe_sent: float | None = None
        try:
            while not self._closed:
                if self._probe_interval <= 0:
                    timeout = None
                elif probe_sent is None:
                    timeout = seconds(self._probe_interval)
                else:
                    timeout = seconds(max(0.05, probe_sent + self._probe_timeout - loop.time()))
                try:
                    msg = await self.session.get_message_async(timeout)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - SlimError variants
                    if self._closed:
                        break
                    if timeout is not None and _is_timeout(exc):
                        if probe_sent is None:
                            probe_sent = loop.time()
                            await self._send_probe()
                        elif loop.time() - probe_sent >= self._probe_timeout:
                            self.error = (
                                f"SLIM peer {self.peer} stopped answering (no reply to a liveness probe "
                                f"within {self._probe_timeout:g}s)"
                            )
                            break
                        continue
                    text = describe_error(exc)
                    if "closed" not in text.lower():
                        self.error = f"SLIM session with {self.peer} failed: {text}"
                    break
                probe_sent = None
                payload: bytes = msg.payload
                if _PROBE_MARK in payload[:200] and await self._handle_probe(payload):
                    continue
                if len(payload) > self._limit:
                    self._queue.put_nowait(MessageTooLarge(len(payload), self._limit))
                    continue
                self._queue.put_nowait(payload.decode("utf-8", errors="replace"))
        finally:
            self._queue.put_nowait(None)

    async def _send_probe(self) -> None:
        probe = {"jsonrpc": "2.0", "id": f"{PROBE_PREFIX}{next(_ids)}", "method": "ping"}
        try:
            await self._publish(json.dumps(probe).encode())
        except Exception:  # noqa: BLE001 - a failed probe shows up as silence
            pass

    async def _handle_probe(self, payload: bytes) -> bool:
        """Answer or swallow a probe; False if the message is not one."""
        try:
            data = json.loads(payload)
        except ValueError:
            return False
        if not isinstance(data, dict) or not str(data.get("id", "")).startswith(PROBE_PREFIX):
            return False
        if data.get("method") == "ping":
            reply = {"jsonrpc": "2.0", "id": data["id"], "result": {}}
            try:
                await self._publish(json.dumps(reply).encode())
            except Exception:  # noqa: BLE001
                pass
        return True

    async def recv(self) -> str | None:
        if self._ended:
            return None
        item = await self._queue.get()
        if item is None:
            self._ended = True
            return None
        if isinstance(item, MessageTooLarge):
            raise item
        return item

    # -- writing ---------------------------------------------------------------

    async def _publish(self, data: bytes) -> None:
        async with self._send_lock:
            await self.session.publish_async(data, None, None)

    async def send(self, message: str) -> None:
        if self._closed or self._ended:
            raise ChannelClosed(self.error or f"SLIM session with {self.peer} is closed")
        try:
            await self._publish(message.encode("utf-8"))
        except Exception as exc:  # noqa: BLE001
            raise ChannelClosed(f"SLIM session with {self.peer}: {describe_error(exc)}") from None

    async def close(self) -> None:
        """End the session from this side (idempotent, bounded)."""
        if self._closed:
            return
        self._closed = True
        try:
            await asyncio.wait_for(self._app.delete_session_and_wait_async(self.session), 2.0)
        except Exception:  # noqa: BLE001 - already gone, or the wait ran out
            pass
        self._reader.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), 1.0)
        except (Exception, asyncio.CancelledError):  # noqa: BLE001 - the reader's own end
            pass
