"""A SLIM point-to-point session as a onedoor Channel: one whole message per publish.

A reader task pulls messages into a queue. Payloads are decoded as UTF-8 with
``surrogateescape``, so bytes that are not UTF-8 reach the door as text the wire policy
(:mod:`onedoor.wire`) refuses, instead of being silently "repaired".

SLIM does not tell a session that its peer died, so after ``probe_interval`` seconds of
silence the reader sends a JSON-RPC ``ping`` request whose id starts with
``onedoor-probe-``; any message from the peer proves it alive, and silence for
``probe_timeout`` more seconds ends the session. Probe requests and their replies are
answered and dropped here: doors never see them, and other MCP-over-SLIM peers answer
``ping`` themselves (any JSON-RPC peer at least answers with an error, which is just as
good a sign of life).

A client checks a new session with the same probe (:meth:`SlimChannel.handshake`)
before using it: a worker that refuses a session (no MLS, too many sessions) says why
in a ``onedoor/session_refused`` notification and drops it, and the client then fails
with :class:`SlimTransportError` whatever the order in which those events arrive.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from onedoor import ChannelClosed, MessageTooLarge
from onedoor.wire import WireError, decode_json, encode_text, jsonrpc

from .bindings import describe_error, seconds
from .errors import SlimTransportError

PROBE_PREFIX = "onedoor-probe-"
_PROBE_MARK = PROBE_PREFIX.encode()
REFUSED_METHOD = "onedoor/session_refused"  # a worker's last word on a session it will not serve
_REFUSED_MARK = REFUSED_METHOD.encode()
_ids = itertools.count(1)


def refusal_notice(reason: str) -> bytes:
    """What a worker publishes on a session it refuses, before dropping it."""
    return jsonrpc.dumps({"jsonrpc": "2.0", "method": REFUSED_METHOD, "params": {"reason": reason}}).encode()


def _decoded(payload: bytes) -> Any:
    try:
        return decode_json(payload)
    except WireError:
        return None


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
        client: bool = False,
    ) -> None:
        """``client``: this side opened the session (it heeds a worker's refusal notice)."""
        self.session = session
        self.peer = peer
        self.error: str | None = None  # why the session ended, if not by a close
        self.refused = False  # the peer refused the session (client side)
        self._client = client
        self._heard = asyncio.Event()  # the peer has sent something: it serves this session
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
                if self._client and _REFUSED_MARK in payload[:200] and self._note_refusal(payload):
                    break
                self._heard.set()
                if _PROBE_MARK in payload[:200] and await self._handle_probe(payload):
                    continue
                if len(payload) > self._limit:
                    self._queue.put_nowait(MessageTooLarge(len(payload), self._limit))
                    continue
                self._queue.put_nowait(payload.decode("utf-8", errors="surrogateescape"))
        finally:
            self._queue.put_nowait(None)

    async def _send_probe(self) -> None:
        probe = {"jsonrpc": "2.0", "id": f"{PROBE_PREFIX}{next(_ids)}", "method": "ping"}
        try:
            await self._publish(jsonrpc.dumps(probe).encode())
        except Exception:  # noqa: BLE001 - a failed probe shows up as silence
            pass

    async def _handle_probe(self, payload: bytes) -> bool:
        """Answer or swallow a probe; False if the message is not one."""
        data = _decoded(payload)
        if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not data["id"].startswith(PROBE_PREFIX):
            return False
        if data.get("method") == "ping":
            reply = {"jsonrpc": "2.0", "id": data["id"], "result": {}}
            try:
                await self._publish(jsonrpc.dumps(reply).encode())
            except Exception:  # noqa: BLE001
                pass
        return True

    def _note_refusal(self, payload: bytes) -> bool:
        """A worker's refusal notice ends the session with its reason; False if not one."""
        data = _decoded(payload)
        if not isinstance(data, dict) or data.get("method") != REFUSED_METHOD or "id" in data:
            return False
        params = data.get("params")
        reason = params.get("reason") if isinstance(params, dict) else None
        self.refused = True
        self.error = f"{self.peer} refused the session: {reason if isinstance(reason, str) else 'no reason given'}"
        return True

    async def handshake(self, timeout: float) -> None:
        """Make sure the peer serves this session: a probe, then its reply (or any message).

        Raises :class:`SlimTransportError` if the peer refuses or drops the session first,
        or stays silent for ``timeout`` seconds. Called by the client before the channel
        is handed out, so a refusal is one error however the events are ordered.
        """
        probe = {"jsonrpc": "2.0", "id": f"{PROBE_PREFIX}{next(_ids)}", "method": "ping"}
        try:
            await self._publish(jsonrpc.dumps(probe).encode())
        except Exception as exc:  # noqa: BLE001 - dropped before we could say anything
            await self._wait_reader(min(timeout, 2.0))  # a refusal notice may still be in flight
            raise SlimTransportError(self._ended_why(describe_error(exc))) from None
        heard = asyncio.ensure_future(self._heard.wait())
        try:
            await asyncio.wait({heard, self._reader}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            heard.cancel()
        if self._heard.is_set() and not self.refused:
            return
        if self._reader.done():
            raise SlimTransportError(self._ended_why("it ended"))
        raise SlimTransportError(f"no answer from {self.peer} on a new session within {timeout:g}s")

    async def _wait_reader(self, timeout: float) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(self._reader), timeout)
        except (Exception, asyncio.CancelledError):  # noqa: BLE001 - only waiting
            pass

    def _ended_why(self, detail: str) -> str:
        if self.refused and self.error:
            return self.error
        return (
            f"{self.peer} dropped the session before serving it ({self.error or detail}): a worker refuses a "
            "session without MLS unless it runs with -o mls=false, and refuses sessions over its max_sessions"
        )

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
        await self.send_bytes(encode_text(message))

    async def send_bytes(self, data: bytes) -> None:
        """Publish bytes as they are (a client that already holds an encoded message, or a
        test sending what is not UTF-8); ChannelClosed if the session is gone."""
        if self._closed or self._ended:
            raise ChannelClosed(self.error or f"SLIM session with {self.peer} is closed")
        try:
            await self._publish(bytes(data))
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
