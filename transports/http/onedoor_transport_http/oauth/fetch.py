"""JSON from the authorization server (metadata, JWKS, introspection): bounded in time and size.

One ``httpx.AsyncClient`` per server, made on first use (on the loop that serves) and
closed with the app's lifespan. Redirects are not followed; an answer over
:data:`MAX_BYTES`, not JSON, or not an object is a :class:`FetchError` saying so.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

MAX_BYTES = 512 * 1024
TIMEOUT = 5.0


class FetchError(Exception):
    """The authorization server gave no usable answer; the message says why (no secrets)."""


class Fetcher:
    def __init__(self, timeout: float = TIMEOUT) -> None:
        self.timeout = timeout
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout, follow_redirects=False,
                                             headers={"accept": "application/json", "user-agent": "onedoor"})
        return self._client

    async def get_json(self, url: str) -> dict[str, Any]:
        """The JSON object at ``url`` (status 200 only)."""
        status, body = await self._send("GET", url)
        if status != 200:
            raise FetchError(f"GET {url} answered {status}")
        return body

    async def post_form(self, url: str, form: dict[str, str], auth: tuple[str, str]) -> tuple[int, dict[str, Any]]:
        """(status, JSON object) of a form POST with HTTP Basic credentials."""
        return await self._send("POST", url, data=form, auth=auth)

    async def _send(self, method: str, url: str, **kw: Any) -> tuple[int, dict[str, Any]]:
        try:
            async with self._http().stream(method, url, **kw) as response:
                data = bytearray()
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if len(data) > MAX_BYTES:
                        raise FetchError(f"{method} {url}: the answer is over {MAX_BYTES} bytes")
                status = response.status_code
        except httpx.HTTPError as exc:
            raise FetchError(f"{method} {url} failed: {type(exc).__name__}: {exc}".rstrip(": ")) from None
        if status >= 300:
            return status, {}
        try:
            body = json.loads(bytes(data))
        except ValueError:
            raise FetchError(f"{method} {url} answered {status} with a body that is not JSON") from None
        if not isinstance(body, dict):
            raise FetchError(f"{method} {url} answered {status} with JSON that is not an object")
        return status, body

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


__all__ = ["MAX_BYTES", "FetchError", "Fetcher"]
