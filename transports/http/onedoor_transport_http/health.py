"""``/healthz`` (alive) and ``/readyz`` (takes new runs) for load balancers and probes.

Both are open to every caller: a balancer has no token. A caller without the server's
token learns ``{"status": "ok"}`` / ``{"status": "ready"}`` or a 503 ``{"status":
"not_ready"}``, nothing more; one with it (or any caller of a server without a token) also
gets the details: the doors, the backend, runs going on and parked, and why not ready
(``draining``: the server is stopping; ``store``: the thread store does not answer).
"""

from __future__ import annotations

import asyncio
from typing import Any

from onedoor import ServeContext
from onedoor.composition import PRINCIPAL_KEY

from . import HttpOptions

HEALTH_PATH = "/healthz"  # alive
READY_PATH = "/readyz"  # takes new runs: not draining, the store answers


def health_routes(ctx: ServeContext, doors: list[Any], options: HttpOptions) -> list[Any]:
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    def trusted(request: Request) -> bool:
        """Health details only for a caller the server would let in: no token, or its token."""
        return not options.requires_token or PRINCIPAL_KEY in request.scope

    async def health(request: Request) -> JSONResponse:
        """Alive. Open to every caller (a load balancer has no token); the details only to a trusted one."""
        kernel = ctx.kernel
        body: dict[str, Any] = {"status": "ok"}
        if trusted(request):
            body |= {"doors": [d.name for d in doors], "backend": kernel.backend.name,
                     "active_runs": kernel.active_runs, "parked_runs": kernel.parked_runs, "draining": kernel.draining}
        return JSONResponse(body)

    async def ready(request: Request) -> JSONResponse:
        """Ready for new runs: not draining, and the thread store answers (within 2 s)."""
        why = "draining" if ctx.kernel.draining else await _store_trouble(ctx.kernel.store)
        if why is None:
            return JSONResponse({"status": "ready"})
        body = {"status": "not_ready"} | ({"reason": why} if trusted(request) else {})
        return JSONResponse(body, status_code=503, headers={"retry-after": "1"})

    return [Route(HEALTH_PATH, health), Route(READY_PATH, ready)]


async def _store_trouble(store: Any) -> str | None:
    """None when the store answers a read (or there is none); else why not, in a word."""
    if store is None:
        return None
    try:
        await asyncio.wait_for(store.list("onedoor:readyz", limit=1), 2.0)
    except Exception:  # noqa: BLE001 - any failure means: not ready
        return "store"
    return None


__all__ = ["HEALTH_PATH", "READY_PATH", "health_routes"]
