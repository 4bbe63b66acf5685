"""Hypothesis strategies for shared-state tests: a JSON object and sequences of RFC 6902
patches that apply to it, built against the document as it is after each operation (so every
delta applies: add, remove, replace, move, copy and test, keys that need ``~0``/``~1``
escapes, array indexes and ``-``), and what they make (with jsonpatch, as the kernel does)."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer
from hypothesis import strategies as st

# keys the official client's fast-json-patch refuses (prototype pollution guard): kept out of states
BANNED_KEYS = {"__proto__", "constructor", "prototype"}
KEYS = st.text(st.sampled_from("abcxyz019~/ é💡"), min_size=0, max_size=4).filter(lambda k: k not in BANNED_KEYS)
SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**31), 2**31)
    | st.floats(allow_nan=False, allow_infinity=False, width=64).filter(lambda f: f == 0 or 1e-300 < abs(f) < 1e300)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=6)
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                      max_leaves=6)
OBJECTS = st.dictionaries(KEYS, VALUES, max_size=4)


def pointer(path: list[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def locations(doc: Any, path: list[Any] | None = None) -> list[tuple[list[Any], Any]]:
    """Every (path, value) in ``doc``, the root first."""
    path = path or []
    found = [(path, doc)]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += locations(value, [*path, key])
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += locations(value, [*path, index])
    return found


@st.composite
def operation(draw: Any, doc: dict[str, Any]) -> dict[str, Any]:
    """One operation that applies to ``doc``."""
    places = locations(doc)
    containers = [(p, v) for p, v in places if isinstance(v, (dict, list))]
    inner = [(p, v) for p, v in places if p]  # not the root
    kinds = ["add", "add", "replace"] + (["remove", "move", "copy", "test"] if inner else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "add" or (kind in ("move", "copy")):
        where, container = draw(st.sampled_from(containers))
        if isinstance(container, dict):
            target = pointer([*where, draw(KEYS)])
        else:
            at = draw(st.integers(0, len(container)))
            target = pointer(where) + ("/-" if at == len(container) and draw(st.booleans()) else f"/{at}")
        if kind == "add":
            return {"op": "add", "path": target, "value": draw(VALUES)}
        source, _ = draw(st.sampled_from(inner))
        if kind == "move" and (target + "/").startswith(pointer(source) + "/"):
            return {"op": "copy", "from": pointer(source), "path": target}  # a move into itself does not apply
        return {"op": kind, "from": pointer(source), "path": target}
    if kind == "replace":
        if not inner or draw(st.integers(0, 9)) == 0:
            return {"op": "replace", "path": "", "value": draw(OBJECTS)}
        where, _ = draw(st.sampled_from(inner))
        return {"op": "replace", "path": pointer(where), "value": draw(VALUES)}
    where, value = draw(st.sampled_from(inner))
    if kind == "remove":
        return {"op": "remove", "path": pointer(where)}
    return {"op": "test", "path": pointer(where), "value": copy.deepcopy(value)}


@st.composite
def patch_sequence(draw: Any, max_deltas: int = 6) -> dict[str, Any]:
    """``{"initial": state, "deltas": [[op, ...], ...], "final": state}``: every delta applies."""
    initial = draw(OBJECTS)
    doc = copy.deepcopy(initial)
    deltas = []
    for _ in range(draw(st.integers(1, max_deltas))):
        ops = []
        for _ in range(draw(st.integers(1, 3))):
            op = draw(operation(doc))
            try:
                new = jsonpatch.apply_patch(doc, [op])
            except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException):
                continue  # a move whose target shifted once its source was taken out: drawn again
            if not isinstance(new, dict):
                continue
            ops.append(op)
            doc = new
        if ops:
            deltas.append(ops)
    return {"initial": initial, "deltas": deltas, "final": doc}


__all__ = ["BANNED_KEYS", "OBJECTS", "VALUES", "locations", "operation", "patch_sequence", "pointer"]
