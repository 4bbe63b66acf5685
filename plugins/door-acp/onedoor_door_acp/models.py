"""The model picker's shapes: a backend's models as ACP shows them, and a session's choice.

A backend's factory may list its models (``factory.models(options)`` -> ``[{"id", "name",
"description"}]``, the running one first) and give the options of another one
(``factory.with_model(options, id)``); :class:`.backends.Backends` calls them. The editor
sees the list twice:

* the session config option ``model`` (category ``model``, what ACP's schema v1 and both
  SDKs carry: ``session/set_config_option`` switches it);
* ``models`` (``currentModelId``, ``availableModels`` of ``modelId``, ``name``,
  ``description``) in the replies of session/new, load, resume and fork, with
  ``session/set_model`` (``sessionId``, ``modelId``): the older, unstable shape that
  editors and agents still use; neither agent-client-protocol 0.12.1 nor the TypeScript
  SDK 2.4 has it, so the door writes it itself.

A session's choice is kept per backend in its settings (``settings["models"]``, saved
with the session: the thread's side table, or the door's own file), so switching the
backend and back finds the model again, and session/load restores it.
"""

from __future__ import annotations

from typing import Any

MODEL_OPTION = "model"  # the config option's id and category
BACKEND_CATEGORY = "_backend"  # a custom category (ACP: names starting with "_" are free): not a second model picker


def clean(listed: Any) -> list[dict[str, str]]:
    """A factory's ``models`` answer as ``[{"id", "name", "description"?}]``, entries without an id left out, ids once."""
    out: dict[str, dict[str, str]] = {}
    for entry in listed if isinstance(listed, (list, tuple)) else ():
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"]:
            continue
        name = entry.get("name")
        model = {"id": entry["id"], "name": name if isinstance(name, str) and name else entry["id"]}
        if isinstance(entry.get("description"), str) and entry["description"]:
            model["description"] = entry["description"]
        out.setdefault(model["id"], model)
    return list(out.values())


def chosen(settings: dict[str, Any], backend: str) -> str | None:
    """The model a session picked for ``backend``, if it picked one."""
    picks = settings.get("models")
    value = picks.get(backend) if isinstance(picks, dict) else None
    return value if isinstance(value, str) else None


def with_choice(settings: dict[str, Any], backend: str, model_id: str) -> dict[str, Any]:
    """New settings (never changed in place: a fork may share the dict) with ``model_id`` picked for ``backend``."""
    picks = settings.get("models")
    return {**settings, "models": {**(picks if isinstance(picks, dict) else {}), backend: model_id}}


def model_option(models: list[dict[str, str]], current: str) -> dict[str, Any]:
    """The ``model`` config option (a select of the backend's models)."""
    return {
        "id": MODEL_OPTION, "name": "Model", "category": MODEL_OPTION, "type": "select",
        "description": "which model answers in this session",
        "currentValue": current,
        "options": [{"value": m["id"], "name": m["name"], **({"description": m["description"]} if "description" in m else {})}
                    for m in models],
    }


def model_state(models: list[dict[str, str]], current: str) -> dict[str, Any]:
    """``models`` of a session reply (the unstable SessionModelState)."""
    return {
        "currentModelId": current,
        "availableModels": [{"modelId": m["id"], "name": m["name"],
                             **({"description": m["description"]} if "description" in m else {})} for m in models],
    }


__all__ = ["BACKEND_CATEGORY", "MODEL_OPTION", "chosen", "clean", "model_option", "model_state", "with_choice"]
