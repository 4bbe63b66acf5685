"""Push notifications: every update of a task POSTed to the client's webhooks (:class:`PushSender`).

The server running a task hands each event (the task, its status and artifact updates)
to the sender as the SDK stores it. For every config of the task (:mod:`.push_configs`)
the body is the event as an A2A ``StreamResponse`` (``{"statusUpdate": {...}}``…), with
``X-A2A-Notification-Token`` (the config's token) and ``Authorization: <scheme>
<credentials>`` (its authentication), the way a2a-sdk's own sender sends them.

What this sender adds to the SDK's (which POSTs once, in the task's event loop, and logs
a traceback for every failure):

- **Never in the task's way**: each (task, config) has a lane, a small queue with one
  worker that POSTs its events in order; the task goes on meanwhile.
- **Retried with back-off**: a connection error, a timeout, 408, 425, 429 or a 5xx is
  tried again (``push_retries`` times, from ``BACKOFF_FIRST`` seconds doubling to
  ``BACKOFF_MAX``, or the webhook's ``Retry-After`` within that); any other answer is not.
  A failure is one warning line, no traceback.
- **Never to private addresses** (unless ``-o a2a.push_allow_private=true``): the host
  must resolve only to public unicast addresses (not loopback, private, link-local,
  shared, reserved, multicast…: cloud metadata and internal services stay out of reach),
  checked when the config is made and again at every POST, and the POST goes to the
  address that was checked (the URL's host kept as ``Host`` and TLS name), so a name that
  resolves elsewhere the second time (DNS rebinding) is no way around it. No proxy from
  the environment, no redirects followed.
- **Bounded**: ``MAX_QUEUED`` events wait per lane (more are dropped, said once), at most
  ``MAX_LANES`` lanes and ``MAX_SENDING`` POSTs at once, ``push_timeout`` seconds each;
  a lane ends after the task's final update, or when idle for ``IDLE_LANE`` seconds.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from a2a.server.tasks import PushNotificationSender
from a2a.types import Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent
from a2a.utils.proto_utils import to_stream_response
from google.protobuf.json_format import MessageToDict

log = logging.getLogger("onedoor.door.a2a.push")

MAX_URL = 2048
MAX_QUEUED = 1000
MAX_LANES = 1000
MAX_SENDING = 64
IDLE_LANE = 60.0
BACKOFF_FIRST, BACKOFF_MAX = 0.5, 30.0
RETRY_STATUSES = frozenset({408, 425, 429})
FINAL = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_FAILED,
                   TaskState.TASK_STATE_REJECTED})


class PushRefused(Exception):
    """A webhook URL this server does not POST to (the reason says why)."""


@dataclass(frozen=True)
class Target:
    url: str  # what to connect to (the checked address in place of the host name)
    host: str  # the Host header
    extensions: dict[str, Any]


def _blocked(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    mapped = getattr(ip, "ipv4_mapped", None)
    if mapped is not None:
        ip = mapped
    return (not ip.is_global or ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_reserved
            or ip.is_unspecified)


async def target_of(url: str, *, allow_private: bool) -> Target:
    """Where a POST to ``url`` goes; :class:`PushRefused` if it may not go there."""
    if len(url) > MAX_URL:
        raise PushRefused(f"the push notification URL is longer than {MAX_URL} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise PushRefused("the push notification URL does not parse") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PushRefused("a push notification URL is http:// or https:// with a host")
    host = parts.hostname
    netloc_host = parts.netloc.rpartition("@")[2]
    if allow_private:
        return Target(url, netloc_host, {})
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port or (443 if parts.scheme == "https" else 80),
                                                             type=socket.SOCK_STREAM)
    except OSError:
        raise PushRefused(f"the push notification host {host!r} does not resolve") from None
    addresses = [str(info[4][0]) for info in infos]
    if not addresses or any(_blocked(a) for a in addresses):
        raise PushRefused(f"the push notification host {host!r} is not a public address (loopback, private, "
                          "link-local and other internal addresses are refused; -o a2a.push_allow_private=true "
                          "allows them)")
    address = addresses[0]
    literal = f"[{address}]" if ":" in address else address
    pinned = urlunsplit((parts.scheme, literal + (f":{port}" if port else ""), parts.path or "/", parts.query, ""))
    return Target(pinned, netloc_host, {"sni_hostname": host} if parts.scheme == "https" else {})


def url_validator(allow_private: bool) -> Any:
    """The request handler's check of a config's URL: InvalidParamsError with the reason."""
    from a2a.utils.errors import InvalidParamsError

    async def validate(url: str) -> bool:
        try:
            await target_of(url, allow_private=allow_private)
        except PushRefused as exc:
            raise InvalidParamsError(message=str(exc)) from None
        return True

    return validate


def is_final(event: Any) -> bool:
    if isinstance(event, TaskStatusUpdateEvent | Task):
        return event.status.state in FINAL
    return False


class _Lane:
    def __init__(self, config: Any) -> None:
        self.config = config
        self.queue: asyncio.Queue[tuple[dict[str, Any], bool]] = asyncio.Queue(MAX_QUEUED)
        self.worker: asyncio.Task[None] | None = None
        self.dropped = 0


class PushSender(PushNotificationSender):  # type: ignore[misc]
    def __init__(self, configs: Any, *, allow_private: bool = False, retries: int = 5, timeout: float = 10.0) -> None:
        self.configs = configs
        self.allow_private = allow_private
        self.retries = retries
        self.timeout = timeout
        self._lanes: dict[tuple[str, str], _Lane] = {}
        self._sending: asyncio.Semaphore | None = None
        self._client: Any = None

    async def send_notification(self, task_id: str, event: Any) -> None:
        try:
            configs = await self._configs_for(task_id, event)
        except Exception as exc:  # noqa: BLE001 - the store is out: this event is not pushed
            log.warning("push for task %s: its configs could not be read (%s: %s)", task_id, type(exc).__name__, exc)
            return
        if not configs:
            return
        body = MessageToDict(to_stream_response(event))
        final = is_final(event)
        for config in configs:
            self._enqueue(task_id, config, body, final)

    async def _configs_for(self, task_id: str, event: Any) -> list[Any]:
        """The task's configs: read again for anything but an artifact update (a status changed)."""
        fresh_read = getattr(self.configs, "for_dispatch", None)
        if fresh_read is None:  # the SDK's store
            return list(await self.configs.get_info_for_dispatch(task_id))
        return list(await fresh_read(task_id, fresh=not isinstance(event, TaskArtifactUpdateEvent)))

    def _enqueue(self, task_id: str, config: Any, body: dict[str, Any], final: bool) -> None:
        key = (task_id, config.id)
        lane = self._lanes.get(key)
        if lane is None:
            if len(self._lanes) >= MAX_LANES:
                log.warning("push for task %s dropped: %d webhooks are being served already", task_id, MAX_LANES)
                return
            lane = self._lanes[key] = _Lane(config)
            lane.worker = asyncio.get_running_loop().create_task(self._serve(key, lane), name=f"onedoor-a2a-push-{task_id}")
        lane.config = config  # the latest (a config replaced under the same id)
        try:
            lane.queue.put_nowait((body, final))
        except asyncio.QueueFull:
            lane.dropped += 1
            if lane.dropped == 1:
                log.warning("push for task %s to %s: the webhook is behind by %d events; newer ones are dropped",
                            task_id, _shown(config.url), MAX_QUEUED)

    async def _serve(self, key: tuple[str, str], lane: _Lane) -> None:
        try:
            while True:
                try:
                    body, final = await asyncio.wait_for(lane.queue.get(), IDLE_LANE)
                except TimeoutError:
                    return
                await self._deliver(key[0], lane.config, body)
                if final:
                    return
        finally:
            if self._lanes.get(key) is lane:
                del self._lanes[key]

    async def _deliver(self, task_id: str, config: Any, body: dict[str, Any]) -> bool:
        """POST ``body`` to the config's webhook, trying again as the module says; True once it took it."""
        headers = {"Content-Type": "application/json", "User-Agent": "onedoor-a2a-push"}
        if config.token:
            headers["X-A2A-Notification-Token"] = config.token
        if config.HasField("authentication") and config.authentication.scheme and config.authentication.credentials:
            headers["Authorization"] = f"{config.authentication.scheme} {config.authentication.credentials}"
        pause, reason = BACKOFF_FIRST, ""
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(pause)
                pause = min(pause * 2, BACKOFF_MAX)
            try:
                target = await target_of(config.url, allow_private=self.allow_private)
            except PushRefused as exc:
                log.warning("push for task %s not sent: %s", task_id, exc)
                return False
            status, wait = await self._post(target, headers, body)
            if status is not None and 200 <= status < 300:
                return True
            reason = f"HTTP {status}" if status is not None else wait_reason(wait)
            if status is not None and status not in RETRY_STATUSES and status < 500:
                break
            if isinstance(wait, float):
                pause = min(max(pause, wait), BACKOFF_MAX)
        log.warning("push for task %s to %s failed (%s) after %d attempt(s)", task_id, _shown(config.url), reason,
                    attempt + 1)
        return False

    async def _post(self, target: Target, headers: dict[str, str], body: dict[str, Any]) -> tuple[int | None, Any]:
        """(the status, the Retry-After seconds if any) or (None, the error's name)."""
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(trust_env=False, follow_redirects=False, timeout=self.timeout)
            self._sending = asyncio.Semaphore(MAX_SENDING)
        assert self._sending is not None
        async with self._sending:
            try:
                response = await self._client.post(target.url, json=body, headers={**headers, "Host": target.host},
                                                   extensions=target.extensions)
            except httpx.HTTPError as exc:
                return None, type(exc).__name__
        retry_after = response.headers.get("retry-after", "")
        return response.status_code, float(retry_after) if retry_after.isdigit() else None

    async def aclose(self) -> None:
        for lane in list(self._lanes.values()):
            if lane.worker is not None:
                lane.worker.cancel()
        if self._client is not None:
            await self._client.aclose()


def wait_reason(wait: Any) -> str:
    return wait if isinstance(wait, str) else "no answer"


def _shown(url: str) -> str:
    """A webhook URL for a log line: scheme, host and path, without credentials or query."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


__all__ = ["PushRefused", "PushSender", "Target", "is_final", "target_of", "url_validator"]
