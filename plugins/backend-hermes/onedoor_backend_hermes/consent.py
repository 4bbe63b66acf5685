"""Machine tools behind a person's consent (``allow_machine_tools=ask``).

hermes calls the ``pre_tool_call`` hooks of its plugin manager once before every tool
call, on every dispatch path (sequential, concurrent), and skips the call when a hook
answers ``{"action": "block", "message": ...}``: the message becomes the tool's result.
onedoor adds one such hook per process. It finds the run a call belongs to through a
context variable that the run's hermes thread sets (hermes copies context variables into
its tool threads) and asks that run's gate. A call of an asked-for tool from a thread
outside every run (a ``delegate_task`` subagent runs on a pool thread without the run's
context) cannot be asked for: it is refused while any ``ask`` run offering that tool is in
flight. Other calls pass untouched. A gate that fails blocks the call.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from typing import Any, Callable

# (call_id, tool_name, arguments) -> None to let the call run, or the message it is blocked with
Gate = Callable[[str, str, Any], "str | None"]

_gate: contextvars.ContextVar[Gate | None] = contextvars.ContextVar("onedoor_hermes_consent", default=None)
_lock = threading.Lock()
_asking: dict[str, int] = {}  # tool name -> ask runs in flight that ask before it
log = logging.getLogger("onedoor.hermes")


def open_gate(gate: Gate, tools: frozenset[str]) -> None:
    """Route this thread's tool calls (and those of the threads hermes starts from it) to
    ``gate``, which asks about ``tools``; call :func:`close_gate` on the same thread after."""
    install_hook()
    with _lock:
        for tool in tools:
            _asking[tool] = _asking.get(tool, 0) + 1
    _gate.set(gate)


def close_gate(gate: Gate, tools: frozenset[str]) -> None:
    """Undo :func:`open_gate` (on the thread that opened ``gate``; nothing if it did not)."""
    if _gate.get() is not gate:
        return
    _gate.set(None)
    with _lock:
        for tool in tools:
            left = _asking.get(tool, 0) - 1
            if left > 0:
                _asking[tool] = left
            else:
                _asking.pop(tool, None)


def install_hook() -> None:
    """Register the ``pre_tool_call`` hook with hermes' plugin manager (once per process)."""
    from hermes_cli.plugins import PluginContext, PluginManifest, get_plugin_manager

    with _lock:
        manager = get_plugin_manager()
        if pre_tool_call not in manager._hooks.get("pre_tool_call", ()):
            PluginContext(PluginManifest(name="onedoor"), manager).register_hook("pre_tool_call", pre_tool_call)


def pre_tool_call(tool_name: str = "", args: Any = None, tool_call_id: str = "", **_context: Any) -> dict[str, str] | None:
    """hermes' hook: None lets the call run; a block directive stops it."""
    gate = _gate.get()
    if gate is None:
        if tool_name in _asking:
            return {"action": "block", "message": f"BLOCKED: {tool_name} was not run: a call from outside the "
                                                   "conversation (a subagent) cannot be asked for."}
        return None
    try:
        message = gate(str(tool_call_id or ""), tool_name, args if isinstance(args, dict) else {})
    except Exception as exc:  # noqa: BLE001 - a gate that fails must not let the call through
        log.warning("consent gate failed for %s: %s", tool_name, exc)
        message = f"BLOCKED: {tool_name} was not run (asking for consent failed)."
    return None if message is None else {"action": "block", "message": message}
