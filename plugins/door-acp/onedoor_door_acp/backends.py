"""The backends and models an editor may pick per session: the choices, a kernel for each (made on first use), the config options.

The server's own kernel answers its backend; any other choice gets a kernel of its own
that shares the server's limits, hooks and thread store. The choices are the ``backends``
option's, or every installed backend, the server's first.

A backend whose factory lists models (``factory.models(options)``) offers them as the
session's ``model`` option (:mod:`.models`); the backend's own model runs on its kernel,
another one on a kernel of its own, built from ``factory.with_model(options, id)`` (in a
worker thread: it may import the backend's libraries).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from onedoor import OnedoorError

from . import models as picker
from .errors import invalid
from .sessions import Session

log = logging.getLogger("onedoor.door.acp")


def _model_backend(factory: Any, name: str, options: Any, model_id: str) -> Any:
    """The backend that runs ``model_id`` (ValueError or a onedoor error if it cannot)."""
    from onedoor import Backend
    from onedoor.plugins.discovery import backend_accepts

    new = factory.with_model(options, model_id)
    capabilities = frozenset(getattr(factory, "capabilities", ()) or ())
    return Backend(name, lambda: factory(new), capabilities, backend_accepts(factory, name, new))


class Backends:
    """The backend and model choices of one ACP connection and the kernels made for them."""

    def __init__(self, ctx: Any, options: Any) -> None:
        self.ctx = ctx
        self.options = options
        name = ctx.kernel.backend.name
        self.kernels = {name: ctx.kernel}
        self.backend_options: dict[str, Any] = {name: ctx.options_for(name)}  # what each backend was made with
        self.model_lists: dict[str, list[dict[str, str]]] = {}
        self.model_kernels: dict[tuple[str, str], Any] = {}

    def choices(self) -> list[str]:
        if self.options.backends:
            names = [n.strip() for n in self.options.backends.split(",") if n.strip()]
        else:
            from onedoor import plugins

            names = plugins.names("backend")
        default = self.ctx.kernel.backend.name
        return [default] + [n for n in names if n != default]

    def _kernel(self, backend: Any) -> Any:
        from onedoor import Kernel

        base = self.ctx.kernel
        return Kernel(backend, limits=base.limits, hooks=base.hooks, store=base.store)

    def kernel_for(self, name: str) -> Any:
        """The kernel that runs backend ``name`` (its own model); an invalid-params error if it is not a choice or cannot be made."""
        kernel = self.kernels.get(name)
        if kernel is None:
            from onedoor import plugins

            if name not in self.choices():
                raise invalid(f"unknown backend {name!r}; choose one of {', '.join(self.choices())}")
            try:
                backend, options = plugins.make_backend(name)
            except OnedoorError as exc:
                raise invalid(f"backend {name!r} cannot be used: {exc}") from None
            self.backend_options[name] = options
            kernel = self.kernels[name] = self._kernel(backend)
        return kernel

    def uses_tools(self, session: Session) -> bool:
        return "tools" in self.kernel_for(session.backend).backend.capabilities

    # -- models ----------------------------------------------------------------------------
    @staticmethod
    def _factory(name: str) -> Any:
        from onedoor import plugins

        try:
            return plugins.load("backend", name)
        except OnedoorError:  # an in-process backend (tests, embedding): no plugin to ask
            return None

    async def models(self, name: str) -> list[dict[str, str]]:
        """The models backend ``name`` offers, the one it runs first; [] when it lists none."""
        if name not in self.model_lists:
            from acp import RequestError

            try:
                self.kernel_for(name)  # its options are known from here
            except RequestError:  # not a choice any more, or it cannot be made: the session's turn says so
                return []
            factory, options = self._factory(name), self.backend_options.get(name)
            listing = getattr(factory, "models", None)
            found: list[dict[str, str]] = []
            if callable(listing) and callable(getattr(factory, "with_model", None)) and options is not None:
                try:
                    found = picker.clean(await asyncio.to_thread(listing, options))
                except Exception as exc:  # noqa: BLE001 - a backend's bug: no picker, the session still works
                    log.warning("acp: backend %r could not list its models: %s", name, exc)
            self.model_lists[name] = found
        return self.model_lists[name]

    async def model_of(self, session: Session) -> str | None:
        """The session's model: its pick for its backend while that is offered, else the backend's own; None without models."""
        models = await self.models(session.backend)
        if not models:
            return None
        pick = picker.chosen(session.settings, session.backend)
        return pick if pick in {m["id"] for m in models} else models[0]["id"]

    async def kernel_of(self, session: Session) -> Any:
        """The kernel that runs the session's next turn: its backend, on its model."""
        kernel = self.kernel_for(session.backend)
        model = await self.model_of(session)
        if model is None or model == self.model_lists[session.backend][0]["id"]:
            return kernel
        return await self._model_kernel(session.backend, model)

    async def _model_kernel(self, name: str, model_id: str) -> Any:
        kernel = self.model_kernels.get((name, model_id))
        if kernel is None:
            try:
                backend = await asyncio.to_thread(
                    _model_backend, self._factory(name), name, self.backend_options[name], model_id)
            except (ValueError, OnedoorError) as exc:
                raise invalid(f"model {model_id!r} of backend {name!r} cannot be used: {exc}") from None
            kernel = self.model_kernels.setdefault((name, model_id), self._kernel(backend))
        return kernel

    async def check_model(self, session: Session, model_id: Any) -> None:
        """Raise invalid params unless ``model_id`` is one of the session backend's models and can run."""
        models = await self.models(session.backend)
        if not models:
            raise invalid(f"backend {session.backend!r} offers no model choice; pick another backend, or list its "
                          "models with its models option")
        ids = [m["id"] for m in models]
        if not isinstance(model_id, str) or model_id not in ids:
            raise invalid(f"unknown model {str(model_id)[:200]!r} for backend {session.backend!r}; choose one of {', '.join(ids)}")
        if model_id != ids[0]:
            await self._model_kernel(session.backend, model_id)

    # -- what the editor is shown ----------------------------------------------------------
    async def config_options(self, session: Session) -> list[dict[str, Any]]:
        """The session's config options: its model (when its backend lists models), its backend."""
        choices = self.choices()
        if session.backend not in choices:
            choices.append(session.backend)
        options = []
        models = await self.models(session.backend)
        if models:
            options.append(picker.model_option(models, await self.model_of(session) or models[0]["id"]))
        options.append({
            "id": "backend", "name": "Backend", "category": picker.BACKEND_CATEGORY, "type": "select",
            "description": "which onedoor backend answers in this session",
            "currentValue": session.backend,
            "options": [{"value": n, "name": n} for n in choices],
        })
        return options

    async def model_state(self, session: Session) -> dict[str, Any] | None:
        """``models`` of a session reply (the unstable shape), or None when the backend lists none."""
        models = await self.models(session.backend)
        if not models:
            return None
        return picker.model_state(models, await self.model_of(session) or models[0]["id"])


__all__ = ["Backends"]
