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


def copy_state(value: Any) -> Any:
    """A deep copy of a JSON document (objects, arrays and scalars, as :func:`checked_state`
    makes them): about 8x faster than ``copy.deepcopy``, which handles any object."""
    kind = type(value)
    if kind is dict:
        return {key: copy_state(item) for key, item in value.items()}
    if kind is list:
        return [copy_state(item) for item in value]
    return value


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
    """``state`` with JSON Patch ``ops`` applied, all of them or (ValueError naming the one
    that does not apply) none, as a new document; ``state`` is untouched.

    The new document shares what the patch does not touch with ``state``: only the
    containers on the paths the operations change are copied (a delta on a large state
    costs what it changes, not the size of the state). Neither document may then be changed
    in place; the kernel never does, and hands backends a deep copy."""
    import jsonpatch
    import jsonpointer

    if not isinstance(ops, (list, tuple)):
        raise ValueError("a state patch is a list of operations")
    root: Any = dict(state)
    copied = {id(root)}
    try:
        for op in ops:
            if not isinstance(op, dict):
                raise ValueError("each operation of a state patch is an object")
            if op.get("op") == "remove" and op.get("path") == "":
                raise ValueError("a patch may not remove the whole state (send a snapshot)")
            for key in ("path", "from") if op.get("op") == "move" else ("path",):
                if isinstance(op.get(key), str):
                    _copy_parents(root, op[key], copied, jsonpointer)
            root = jsonpatch.apply_patch(root, [op], in_place=True)
            if id(root) not in copied:  # the whole document replaced (path "")
                root = dict(root) if isinstance(root, dict) else root
                copied.add(id(root))
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError, IndexError) as exc:
        raise ValueError(f"the state patch does not apply: {exc}") from None
    if not isinstance(root, dict):
        raise ValueError("a state patch must leave a JSON object")
    return root


def _copy_parents(root: Any, path: str, copied: set[int], jsonpointer: Any) -> None:
    """Copy (shallowly, once per patch) every container from ``root`` down to the parent of
    ``path``, so that changing that parent changes no document sharing it."""
    try:
        parts = jsonpointer.JsonPointer(path).parts[:-1]
    except jsonpointer.JsonPointerException:
        return  # the operation itself says what is wrong
    container = root
    for part in parts:
        if isinstance(container, dict) and part in container:
            key: Any = part
        elif isinstance(container, list) and part.isdigit() and int(part) < len(container):
            key = int(part)
        else:
            return
        child = container[key]
        if not isinstance(child, (dict, list)):
            return
        if id(child) not in copied:
            child = child.copy()
            copied.add(id(child))
            container[key] = child
        container = child


def size_bound(ops: Any) -> int:
    """At most how many characters ``ops`` add to a document's JSON (removals count nothing);
    a ``copy`` counts as unbounded (-1: measure the document)."""
    total = 0
    for op in ops:
        kind = op.get("op")
        if kind in ("add", "replace"):
            total += len(_encode(op.get("value"))) + len(op.get("path", "")) * 2 + 4
        elif kind == "move":
            total += len(op.get("path", "")) * 2 + 4
        elif kind == "copy":
            return -1
    return total


__all__ = ["apply_patch", "checked_state", "copy_state", "size_bound", "state_chars"]
