"""Shared state: the JSON document a run's backend and its client both edit (a to-do list,
a draft, a form), kept with the thread.

A run's state is a JSON object. It comes in with the run (the thread's, or what the client
sent: ``kernel.run(state=...)``), and a backend changes it with a snapshot (the whole
document) or an RFC 6902 JSON Patch, through ``context.set_state`` / ``context.patch_state``
or by yielding ``StateSnapshot`` / ``StateDelta``. The kernel applies every change, with a
real JSON Patch library (``jsonpatch``, imported only when a state is patched), before any
door sees it: a delta is applied atomically to a copy; one that does not apply, that is
not JSON, or that takes the state past ``limits.max_state_chars`` fails the run (a broken
contract, saying why) and the state stays as it was. Doors pass the events on as they came
(a delta applies to what the client holds: the snapshot the stream started with, then every
delta before it); a door that cannot show state drops them.

With a thread, the state is kept with it (``Thread.state``, versioned by
``Thread.state_version``, compare-and-set as the messages are) when the run ends. If another
client changed the thread's state meanwhile, the run's changes are applied again on top of
that (they are kept as the patches they were), and the run fails, saying so, only when they
no longer apply. Clients change a thread's state between runs with
``kernel.threads.patch_state`` / ``set_state``.
"""

from __future__ import annotations

import json
from typing import Any

# strict: no NaN, nothing that is not JSON (the wire's encoder writes str() of those)
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def state_chars(state: Any) -> int:
    return len(_encode(state))


def checked_state(state: Any, limit: int) -> dict[str, Any]:
    """``state`` as a JSON object within ``limit`` characters (ValueError otherwise): a copy
    that shares nothing with what it was given."""
    if not isinstance(state, dict):
        raise ValueError("a state is a JSON object")
    try:
        text = _encode(state)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"the state is not JSON: {exc}") from None
    copied = json.loads(text)
    if len(text) > limit:
        raise ValueError(f"the state has {len(text):,} characters; the limit is {limit:,}")
    return copied


def apply_patch(state: dict[str, Any], ops: Any) -> dict[str, Any]:
    """``state`` with JSON Patch ``ops`` applied, as a new document (``state`` untouched);
    ValueError naming the operation that does not apply."""
    import jsonpatch
    import jsonpointer

    if not isinstance(ops, (list, tuple)):
        raise ValueError("a state patch is a list of operations")
    for op in ops:
        if isinstance(op, dict) and op.get("op") == "remove" and op.get("path") == "":
            raise ValueError("a patch may not remove the whole state (send a snapshot)")
    try:
        result = jsonpatch.apply_patch(state, list(ops), in_place=False)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError, IndexError) as exc:
        raise ValueError(f"the state patch does not apply: {exc}") from None
    if not isinstance(result, dict):
        raise ValueError("a state patch must leave a JSON object")
    return result


__all__ = ["apply_patch", "checked_state", "state_chars"]
