"""The run's shared state and a pydantic-ai agent (see :class:`StateBridge`)."""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any

from onedoor.events import StateDelta, StateSnapshot
from onedoor.state import apply_patch

_SNAPSHOT, _DELTA = "STATE_SNAPSHOT", "STATE_DELTA"


class StateBridge:
    """One run's state between onedoor and pydantic-ai.

    In: deps that hold a state (pydantic-ai's ``StateDeps[Model]``, any ``StateHandler``:
    a dataclass with a ``state`` field) get the run's state, validated into the model. Such
    deps come from ``-o deps=module:attribute``, or are built from the agent's
    ``deps_type`` when it is one.

    Out, after each tool call: the AG-UI state events a tool returned (``StateSnapshotEvent``
    / ``StateDeltaEvent``, or dicts of their shape with ``type`` ``STATE_SNAPSHOT`` /
    ``STATE_DELTA``), in ``ToolReturn.metadata`` or as the return value, as pydantic-ai's
    AG-UI adapter reads them; then what the tool changed in ``deps.state`` (a JSON Patch
    from the state as onedoor last had it).
    """

    def __init__(self, deps: Any, state: dict[str, Any] | None) -> None:
        self.deps = deps
        self.known: dict[str, Any] | None = _copy(state)
        self.seen = self._dump()

    @classmethod
    def for_run(cls, agent: Any, deps_target: str, state: dict[str, Any] | None) -> "StateBridge":
        """The run's deps, holding ``state`` if they hold one; ValueError if it does not fit."""
        if deps_target:
            from .loading import load_object

            deps = load_object(deps_target, "deps")
            if callable(deps) and not isinstance(deps, type):
                deps = deps()
            if state is not None and _holds_state(deps):
                deps.state = _fit(deps.state, state)
        else:
            deps = _deps_of_type(getattr(agent, "deps_type", None), state)
        return cls(deps, state)

    def after_tool(self, part: Any) -> list[Any]:
        """The state changes a tool's result (a ToolReturnPart) carries or made."""
        events: list[Any] = []
        for data in _state_events(part):
            if data.get("type") == _SNAPSHOT and isinstance(data.get("snapshot"), dict):
                self.known = _copy(data["snapshot"])
                events.append(StateSnapshot(data["snapshot"]))
            elif data.get("type") == _DELTA and isinstance(data.get("delta"), list):
                ops = data["delta"]
                events.append(StateDelta(tuple(ops)))
                try:
                    self.known = apply_patch(self.known or {}, ops)
                except ValueError:
                    pass  # the kernel refuses it and fails the run
        if events:
            self._sync_deps()
        return events + self.deps_changes()

    def deps_changes(self) -> list[Any]:
        """A change to ``deps.state`` since it was last looked at, as a delta (or a snapshot)."""
        now = self._dump()
        if now is None or now == self.seen:
            return []
        self.seen = now
        if now == self.known:
            return []
        before, self.known = self.known, _copy(now)
        if before is None:
            return [StateSnapshot(now)]
        return [StateDelta(tuple(diff(before, now)))]

    def _dump(self) -> dict[str, Any] | None:
        if not _holds_state(self.deps):
            return None
        value = _jsonable(self.deps.state)
        return value if isinstance(value, dict) else None

    def _sync_deps(self) -> None:
        """Make ``deps.state`` what onedoor now has (a tool sent it as an event)."""
        if self.known is None or not _holds_state(self.deps):
            return
        try:
            self.deps.state = _fit(self.deps.state, self.known)
        except ValueError:
            return  # does not fit the agent's model: leave the deps as the tool left them
        self.seen = self._dump()


def _holds_state(deps: Any) -> bool:
    return deps is not None and dataclasses.is_dataclass(deps) and hasattr(deps, "state")


def _deps_of_type(deps_type: Any, state: dict[str, Any] | None) -> Any:
    """Deps built from a ``deps_type`` that holds a state (``StateDeps[Model]``), or None."""
    origin: Any = typing.get_origin(deps_type) or deps_type
    if not isinstance(origin, type) or not dataclasses.is_dataclass(origin):
        return None
    if "state" not in {f.name for f in dataclasses.fields(origin)}:
        return None
    args = typing.get_args(deps_type)
    state_type = args[0] if args else _hint(origin, "state")
    build: Any = origin
    try:
        return build(state=_validate(state_type, state or {}))
    except TypeError:
        return None  # the deps need more than a state: the agent gets none, as without state


def _hint(cls: Any, name: str) -> Any:
    try:
        return typing.get_type_hints(cls).get(name)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: take the state as a dict
        return None


def _fit(current: Any, state: dict[str, Any]) -> Any:
    """``state`` in the shape of ``current`` (its pydantic model, or a dict)."""
    return _validate(type(current), state)


def _validate(state_type: Any, state: dict[str, Any]) -> Any:
    from pydantic import BaseModel, ValidationError

    if isinstance(state_type, type) and issubclass(state_type, BaseModel):
        try:
            return state_type.model_validate(state)
        except ValidationError as exc:
            errors = exc.errors()
            where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
            why = errors[0]["msg"] if errors else str(exc)
            raise ValueError(f"the state does not fit {state_type.__name__}: {where or 'state'}: {why}") from None
    return _copy(state)


def _state_events(part: Any) -> list[dict[str, Any]]:
    """The AG-UI state events in a tool result, as JSON objects."""
    found = getattr(part, "metadata", None) or getattr(part, "content", None)
    items = found if isinstance(found, (list, tuple)) else [found]
    out = []
    for item in items:
        data = _jsonable(item)
        if isinstance(data, dict) and data.get("type") in (_SNAPSHOT, _DELTA):
            out.append(data)
    return out


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, bytes)):
        return None
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    try:
        from pydantic_core import to_jsonable_python

        return to_jsonable_python(value)
    except Exception:  # noqa: BLE001 - not a JSON value: no state in it
        return None


def _copy(value: Any) -> Any:
    return None if value is None else json.loads(json.dumps(value))


def diff(before: dict[str, Any], after: dict[str, Any], path: str = "") -> list[dict[str, Any]]:
    """JSON Patch operations that turn ``before`` into ``after`` (objects compared key by
    key, anything else replaced whole)."""
    ops: list[dict[str, Any]] = []
    for key in before:
        if key not in after:
            ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
    for key, value in after.items():
        where = f"{path}/{_escape(key)}"
        if key not in before:
            ops.append({"op": "add", "path": where, "value": value})
        elif isinstance(before[key], dict) and isinstance(value, dict):
            ops.extend(diff(before[key], value, where))
        elif type(before[key]) is not type(value) or before[key] != value:
            ops.append({"op": "replace", "path": where, "value": value})
    return ops


def _escape(key: str) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


__all__ = ["StateBridge", "diff"]
