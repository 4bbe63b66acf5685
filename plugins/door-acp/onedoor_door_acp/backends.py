"""The backends an editor may pick per session: the choices, a kernel for each (made on first use), the config option.

The server's own kernel answers its backend; any other choice gets a kernel of its own
that shares the server's limits, hooks and thread store. The choices are the ``backends``
option's, or every installed backend, the server's first.
"""

from __future__ import annotations

from typing import Any

from onedoor import OnedoorError

from .errors import invalid
from .sessions import Session


class Backends:
    """The backend choices of one ACP connection and the kernels made for them."""

    def __init__(self, ctx: Any, options: Any) -> None:
        self.ctx = ctx
        self.options = options
        self.kernels = {ctx.kernel.backend.name: ctx.kernel}

    def choices(self) -> list[str]:
        if self.options.backends:
            names = [n.strip() for n in self.options.backends.split(",") if n.strip()]
        else:
            from onedoor import plugins

            names = plugins.names("backend")
        default = self.ctx.kernel.backend.name
        return [default] + [n for n in names if n != default]

    def kernel_for(self, name: str) -> Any:
        """The kernel that runs backend ``name``; an invalid-params error if it is not a choice or cannot be made."""
        kernel = self.kernels.get(name)
        if kernel is None:
            from onedoor import Kernel, plugins

            if name not in self.choices():
                raise invalid(f"unknown backend {name!r}; choose one of {', '.join(self.choices())}")
            try:
                backend, _ = plugins.make_backend(name)
            except OnedoorError as exc:
                raise invalid(f"backend {name!r} cannot be used: {exc}") from None
            base = self.ctx.kernel
            kernel = self.kernels[name] = Kernel(backend, limits=base.limits, hooks=base.hooks, store=base.store)
        return kernel

    def uses_tools(self, session: Session) -> bool:
        return "tools" in self.kernel_for(session.backend).backend.capabilities

    def config_options(self, session: Session) -> list[Any]:  # plain dicts; the response models validate them
        choices = self.choices()
        if session.backend not in choices:
            choices.append(session.backend)
        return [{
            "id": "backend", "name": "Backend", "category": "model", "type": "select",
            "description": "which onedoor backend answers in this session",
            "currentValue": session.backend,
            "options": [{"value": n, "name": n} for n in choices],
        }]


__all__ = ["Backends"]
