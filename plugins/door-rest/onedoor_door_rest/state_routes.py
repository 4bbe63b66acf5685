"""A thread's shared state (:mod:`onedoor.state`) between runs.

Routes (under the door's prefix)::

    GET   /threads/{thread_id}/state   {"state": {...}, "version": N}, ETag "N"
    PATCH /threads/{thread_id}/state   RFC 6902 JSON Patch (application/json-patch+json) -> the new state
    PUT   /threads/{thread_id}/state   {"state": {...}} (application/json) -> the new state

``If-Match`` with the ETag of a GET makes a change conditional (compare-and-set): 412
``state_changed`` when the state has changed since; without it a patch applies to the
state as it is when it lands, and a PUT replaces whatever is there. A patch applies
atomically (all its operations or none): one that does not apply is 422 and the state
stays as it was. ``If-None-Match`` on a GET answers 304 while the state is unchanged.
Another principal's thread is 404, as an unknown one; a store that keeps no state, 501.
"""

# No `from __future__ import annotations`: FastAPI reads the parameters' real types.
from typing import Any

from onedoor import ServeContext

from .bodies import json_body, media_type_of, model_validated
from .content_models import JsonPatch, StateOut, StateReplace
from .forms import document_model
from .models import ErrorBody
from .responses import ERRORS, RequestRefused, describe_validation, error_response, json_response
from .thread_models import THREAD_ID_PATTERN

JSON_PATCH = "application/json-patch+json"
_OPS = ("add", "remove", "replace", "move", "copy", "test")

def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorBody, "description": description}


_READ: dict[int | str, dict[str, Any]] = {
    401: ERRORS[401],
    404: _error("unknown_thread: no thread of that id for the caller (another principal's thread answers the same)"),
    422: _error("invalid_request: not a thread id"),
    501: _error("no_threads: the server keeps no threads; no_state: its thread store keeps no state"),
}
_CHANGE: dict[int | str, dict[str, Any]] = {
    **_READ,
    400: _error("bad_json: the body is not JSON the server accepts"),
    **{status: ERRORS[status] for status in (403, 421)},
    409: _error("conflict: the state kept changing while this change was applied; try again"),
    412: _error("state_changed: If-Match names no version the state is at (it has changed since): read it again"),
    413: _error("too_large (the body) or thread_too_large (the state would pass limits.max_state_chars)"),
    415: _error("unsupported_media_type: PATCH takes application/json-patch+json, PUT application/json"),
    422: _error("invalid_request: not a thread id, not a JSON Patch or a state object, or a patch that does not "
                "apply (a path that is not there, a test that fails)"),
}


def etag(version: int) -> str:
    return f'"{version}"'


def checked_patch(value: Any) -> list[Any]:
    """``value`` if it is a JSON Patch (422 saying what is wrong otherwise)."""
    from pydantic import ValidationError

    try:
        JsonPatch.model_validate(value)
    except ValidationError as exc:
        errors = []
        for error in exc.errors():
            loc = tuple(error.get("loc") or ())
            if len(loc) >= 2 and isinstance(loc[0], int) and loc[1] in _OPS:
                loc = (loc[0], *loc[2:])  # the operation's tag (its op)
            errors.append({**error, "loc": ("patch", *loc)})
        raise RequestRefused(*describe_validation(errors)) from None
    return list(value)


def _tags(header: str) -> set[int]:
    """The versions an If-Match header names (strong entity tags of ours; others match nothing)."""
    out: set[int] = set()
    for item in header.split(","):
        tag = item.strip()
        if len(tag) >= 3 and tag[0] == tag[-1] == '"' and tag[1:-1].isdigit() and len(tag) < 24:
            out.add(int(tag[1:-1]))
    return out


def state_answer(state: Any, version: int) -> Any:
    response = json_response({"state": state, "version": version})
    response.headers["etag"] = etag(version)
    return response


def add_state_routes(app: Any, ctx: ServeContext) -> None:
    from fastapi import Header, Path, Request
    from starlette.responses import Response

    desk = ctx.kernel.threads
    thread_id_path = Path(pattern=THREAD_ID_PATTERN, description="the thread's id")
    if_match = Header(None, description='the ETag of a GET ("3"): apply only if the state is still at that version '
                      "(412 otherwise, and for anything that is not one of its ETags); `*` or none: whatever it is")

    async def change(request: Request, thread_id: str, header: str | None, read: Any) -> tuple[str, Any, int | None]:
        """Who changes which state to what (``read(body)``), and the version the change must
        find (None: any, from If-Match), in that order of refusals: 404, 415/422, 412."""
        principal = ctx.principal_of(request.scope)
        _, current = await desk.state(principal, thread_id)  # an unknown thread is 404, whatever the body
        value = read(await json_body(request))
        if header is None or header.strip() == "*":
            return principal, value, None
        if current not in _tags(header):
            raise RequestRefused(412, "state_changed", f"If-Match names no version the state is at (it is at "
                                 f"{etag(current)}): read it again")
        return principal, value, current

    @app.get(
        "/threads/{thread_id}/state",
        operation_id="get_thread_state",
        summary="A thread's shared state and its version (the ETag)",
        response_model=StateOut,
        responses={200: {"headers": {"ETag": {"schema": {"type": "string"}, "description": "the version, quoted"}}},
                   304: {"description": "If-None-Match names the state's version: unchanged"}, **_READ},
    )
    async def get_state(
        request: Request, thread_id: str = thread_id_path,
        if_none_match: str = Header(None, description="the ETag of an earlier GET: 304 while it is unchanged"),
    ) -> Any:
        state, version = await desk.state(ctx.principal_of(request.scope), thread_id)
        if if_none_match is not None and version in _tags(if_none_match):
            return Response(status_code=304, headers={"etag": etag(version)})
        return state_answer(state, version)

    @app.patch(
        "/threads/{thread_id}/state",
        operation_id="patch_thread_state",
        summary="Change a thread's shared state with a JSON Patch (all of it or none)",
        response_model=StateOut,
        responses=_CHANGE,
        openapi_extra={"requestBody": {"required": True, "content": {JSON_PATCH: {
            "schema": {"$ref": "#/components/schemas/JsonPatch"}}}}},
    )
    async def patch_state(request: Request, thread_id: str = thread_id_path, if_match: str = if_match) -> Any:
        kind = media_type_of(request)
        if kind != JSON_PATCH:
            return error_response(415, "unsupported_media_type", f"send the patch as {JSON_PATCH} (RFC 6902), got "
                                  f"Content-Type: {kind or 'none'}", {"Accept-Patch": JSON_PATCH})
        principal, ops, version = await change(request, thread_id, if_match, checked_patch)
        thread = await desk.patch_state(principal, thread_id, ops, expected_version=version)
        return state_answer(thread.state, thread.state_version)

    @app.put(
        "/threads/{thread_id}/state",
        operation_id="put_thread_state",
        summary="Replace a thread's shared state",
        response_model=StateOut,
        responses=_CHANGE,
        openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/StateReplace"}}}}},
    )
    async def put_state(request: Request, thread_id: str = thread_id_path, if_match: str = if_match) -> Any:
        kind = media_type_of(request)
        if kind != "application/json":
            return error_response(415, "unsupported_media_type", f"send the state as application/json, got "
                                  f"Content-Type: {kind or 'none'}")
        principal, body, version = await change(request, thread_id, if_match,
                                                lambda value: model_validated(StateReplace, value))
        thread = await desk.set_state(principal, thread_id, body.state, expected_version=version)
        return state_answer(thread.state, thread.state_version)

    document_model(app, StateReplace)
    document_model(app, JsonPatch)


__all__ = ["JSON_PATCH", "add_state_routes", "etag"]
