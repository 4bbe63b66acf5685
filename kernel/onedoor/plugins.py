"""Plugin discovery and loading.

Four entry-point groups (:data:`GROUPS`). Listing reads installed metadata and imports
nothing; :func:`load` imports exactly the one named plugin (through stevedore) and
checks it is the right kind of object. A broken plugin becomes a :class:`PluginError`
naming it; it never takes the CLI down.

Environment:

``ONEDOOR_PLUGINS``        allow-list, comma-separated ``name`` or ``kind:name``; when set,
                           nothing else loads
``ONEDOOR_BLOCK_PLUGINS``  block-list, same syntax
``ONEDOOR_STRICT_PLUGINS`` ``1``: a hook plugin that fails to load is an error, not a warning
"""

from __future__ import annotations

import inspect
import os
import sys
from dataclasses import dataclass
from typing import Any, Iterable

from .errors import PluginError

GROUPS = {
    "backend": "onedoor.backends",
    "door": "onedoor.doors",
    "transport": "onedoor.transports",
    "hook": "onedoor.hooks",
}

# Where to get the plugins this project publishes, for "not installed" messages.
KNOWN_DISTRIBUTIONS = {
    ("door", "rest"): "onedoor-door-rest",
    ("door", "agui"): "onedoor-door-agui",
    ("door", "mcp"): "onedoor-door-mcp",
    ("door", "acp"): "onedoor-door-acp",
    ("transport", "http"): "onedoor-transport-http",
    ("transport", "slim"): "onedoor-transport-slim",
    ("backend", "hermes"): "onedoor-backend-hermes",
    ("backend", "pydantic-ai"): "onedoor-backend-pydantic-ai",
}


@dataclass
class PluginInfo:
    kind: str
    name: str
    target: str  # "module:attr"
    distribution: str
    version: str
    enabled: bool
    error: str | None = None  # set after a load attempt that failed
    loaded: bool = False


def _split(env: str) -> set[str]:
    return {part.strip() for part in os.environ.get(env, "").split(",") if part.strip()}


def is_enabled(kind: str, name: str) -> bool:
    allow = _split("ONEDOOR_PLUGINS")
    block = _split("ONEDOOR_BLOCK_PLUGINS")
    qualified = f"{kind}:{name}"
    if name in block or qualified in block:
        return False
    if allow and name not in allow and qualified not in allow:
        return False
    return True


def strict_mode() -> bool:
    return os.environ.get("ONEDOOR_STRICT_PLUGINS", "").strip().lower() in ("1", "true", "yes", "on")


def discover(kinds: Iterable[str] = GROUPS) -> list[PluginInfo]:
    """Every installed plugin of these kinds, from metadata only (nothing imported)."""
    from importlib.metadata import entry_points

    found: list[PluginInfo] = []
    all_eps = entry_points()
    for kind in kinds:
        for ep in all_eps.select(group=GROUPS[kind]):
            dist = getattr(ep, "dist", None)
            found.append(
                PluginInfo(
                    kind=kind,
                    name=ep.name,
                    target=ep.value,
                    distribution=getattr(dist, "name", None) or "?",
                    version=getattr(dist, "version", None) or "?",
                    enabled=is_enabled(kind, ep.name),
                )
            )
    found.sort(key=lambda p: (list(GROUPS).index(p.kind), p.name))
    return found


def names(kind: str) -> list[str]:
    return sorted({p.name for p in discover([kind]) if p.enabled})


def _not_found(kind: str, name: str) -> PluginError:
    installed = names(kind)
    hint = f"installed {kind}s: {', '.join(installed) or 'none'}"
    dist = KNOWN_DISTRIBUTIONS.get((kind, name))
    if dist:
        hint += f"; install it with: pip install {dist}"
    if not is_enabled(kind, name):
        return PluginError(f"{kind} {name!r} is disabled by ONEDOOR_PLUGINS / ONEDOOR_BLOCK_PLUGINS; {hint}")
    return PluginError(f"no {kind} named {name!r} is installed; {hint}")


def load(kind: str, name: str) -> Any:
    """Import the named plugin and return its object (classes are instantiated for
    doors and transports). Raises PluginError with a one-line reason."""
    if kind not in GROUPS:
        raise PluginError(f"unknown plugin kind {kind!r}")
    if not is_enabled(kind, name):
        raise _not_found(kind, name)
    from stevedore import DriverManager
    from stevedore.exception import NoMatches

    failures: list[BaseException] = []

    def on_failure(_manager: Any, entrypoint: Any, exc: BaseException) -> None:
        failures.append(exc)

    def ignore_missing(_names: Any) -> None:
        pass  # reported below as "not installed", with a hint

    common: dict[str, Any] = {
        "namespace": GROUPS[kind], "name": name, "invoke_on_load": False, "on_load_failure_callback": on_failure
    }
    try:
        try:
            manager = DriverManager(**common, on_missing_entrypoints_callback=ignore_missing)
        except TypeError:  # stevedore before 5.5 knows only the older flag
            manager = DriverManager(**common, warn_on_missing_entrypoint=False)
        obj = manager.driver
    except NoMatches:
        if failures:
            exc = failures[0]
            raise PluginError(f"{kind} {name!r} failed to load: {type(exc).__name__}: {exc}") from None
        raise _not_found(kind, name) from None
    except Exception as exc:  # noqa: BLE001 - stevedore raises several kinds
        if failures:
            exc = failures[0]  # type: ignore[assignment]
        raise PluginError(f"{kind} {name!r} failed to load: {type(exc).__name__}: {exc}") from None
    return _check_kind(kind, name, obj)


def _check_kind(kind: str, name: str, obj: Any) -> Any:
    if kind == "backend":
        if not callable(obj):
            raise PluginError(f"backend {name!r} is not a factory: got {type(obj).__name__}, expected a callable")
        return obj
    if kind in ("door", "transport"):
        from .composition import check_door, check_transport

        if inspect.isclass(obj):
            try:
                obj = obj()
            except Exception as exc:  # noqa: BLE001
                raise PluginError(f"{kind} {name!r} could not be created: {type(exc).__name__}: {exc}") from None
        problem = check_door(obj) if kind == "door" else check_transport(obj)
        if problem:
            raise PluginError(f"{kind} {name!r} is not a {kind}: {problem}")
        try:
            obj.name = name
        except AttributeError:
            pass
        return obj
    return obj


def check_all(kinds: Iterable[str] = GROUPS) -> list[PluginInfo]:
    """Discover and try to load every enabled plugin (for `onedoor plugins --check`)."""
    infos = discover(kinds)
    for info in infos:
        if not info.enabled:
            continue
        try:
            load(info.kind, info.name)
            info.loaded = True
        except PluginError as exc:
            info.error = str(exc)
    return infos


def plugin_manager(strict: bool | None = None) -> Any:
    """A pluggy PluginManager with the hookspecs and every enabled hook plugin.

    A hook plugin that fails to load is reported on stderr (or raises PluginError in
    strict mode); the others still register.
    """
    import pluggy

    from . import hookspecs

    strict = strict_mode() if strict is None else strict
    pm = pluggy.PluginManager("onedoor")
    pm.add_hookspecs(hookspecs)
    for name in _hook_names():
        if not is_enabled("hook", name):
            continue
        try:
            obj = load("hook", name)
            pm.register(obj, name=f"hook:{name}")
        except Exception as exc:  # noqa: BLE001 - pluggy validation errors too
            message = str(exc) if isinstance(exc, PluginError) else f"hook {name!r}: {exc}"
            if strict:
                raise PluginError(message) from None
            print(f"onedoor: warning: {message}", file=sys.stderr)
    return pm


def _hook_names() -> list[str]:
    """Names in the hooks group, from stevedore's entry-point cache (which loading
    through stevedore reads anyway) rather than a second scan of every distribution."""
    try:
        from stevedore import _cache

        return sorted({ep.name for ep in _cache.get_group_all(GROUPS["hook"])})
    except Exception:  # noqa: BLE001 - a stevedore without that cache: scan metadata
        return [info.name for info in discover(["hook"])]


def register_hooks(pm: Any, kind: str, name: str, obj: Any) -> None:
    """Let a loaded door/transport/backend implement hooks too."""
    if pm is None:
        return
    try:
        if not pm.is_registered(obj):
            pm.register(obj, name=f"{kind}:{name}")
    except Exception as exc:  # noqa: BLE001
        print(f"onedoor: warning: {kind} {name!r} has bad hook implementations: {exc}", file=sys.stderr)


def make_backend(name: str, *, cli: dict[str, Any] | None = None, file: dict[str, Any] | None = None) -> Any:
    """Load a backend and validate its options now, before any server starts."""
    from .kernel import Backend
    from .options import parse_options

    factory = load("backend", name)
    options_type = getattr(factory, "Options", None)
    options = parse_options(options_type, name, cli=cli, file=file)
    capabilities = frozenset(getattr(factory, "capabilities", ()) or ())
    if options_type is None:
        return Backend(name, factory, capabilities), None
    return Backend(name, lambda: factory(options), capabilities), options
