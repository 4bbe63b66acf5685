"""What start-up leaves for later: a package face whose names are imported on first use
(PEP 562 ``__getattr__``), and regular expressions compiled on first use."""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing's flag without importing typing (`import onedoor` does not import it)
if TYPE_CHECKING:
    from typing import Any, Callable


def lazy_names(package: str, where: dict[str, str], namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name of ``where`` comes from the module
    it maps to (absolute, or ``.sub`` relative to the package), imported when first asked for
    and then kept in ``namespace`` (the package's globals), so the next lookup is plain."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__


class LazyPattern:
    """A regular expression compiled on first use, so importing a module compiles none.

    ``LazyPattern(r"[a-z]+").fullmatch(text)`` works as on the compiled pattern: the first
    lookup of a method (``search``, ``fullmatch``, ``sub``, ...) compiles the pattern and keeps
    the compiled pattern's own bound method on the instance, where the next lookup finds it
    at once (a hot path pays what it pays for a compiled pattern)."""

    def __init__(self, pattern: str | bytes, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags

    def __getattr__(self, name: str) -> Any:  # only for a name not yet on the instance
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "compiled":
            import re

            value: Any = re.compile(self.pattern, self.flags)
        else:
            value = getattr(self.compiled, name)
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r}, {self.flags})"
