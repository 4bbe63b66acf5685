"""Plugin discovery and loading (see :mod:`onedoor.plugins`)."""


from __future__ import annotations

import inspect
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..errors import PluginError

GROUPS = {
    "backend": "onedoor.backends",
    "door": "onedoor.doors",
    "transport": "onedoor.transports",
    "hook": "onedoor.hooks",
    "store": "onedoor.stores",
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
    ("door", "a2a"): "onedoor-door-a2a",
    ("store", "postgres"): "onedoor-store-postgres",
}

IN_PROCESS = "(in-process)"  # the distribution shown for plugins added by add_in_process_plugin


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
    warnings: list[str] = field(default_factory=list)  # set by check_all: e.g. an unknown hook name
    obj: Any = field(default=None, repr=False, compare=False)  # the loaded object, once loaded


# ---------------------------------------------------------------------------------------
# Plugins added in-process (a seam for tests)

_in_process: dict[tuple[str, str], Any] = {}


def add_in_process_plugin(kind: str, name: str, obj: Any) -> None:
    """Make ``obj`` the ``kind`` plugin ``name`` in this process, ahead of any installed
    plugin of that name, as if an entry point named it: it is listed, loaded (and checked)
    by :func:`load`, and a ``hook`` is registered by :func:`plugin_manager`. Allow and block
    lists still apply. Meant for tests and test launchers."""
    if kind not in GROUPS:
        raise PluginError(f"unknown plugin kind {kind!r}")
    _in_process[(kind, name)] = obj


def remove_in_process_plugin(kind: str, name: str) -> None:
    """Undo :func:`add_in_process_plugin` (nothing happens if it was not added)."""
    _in_process.pop((kind, name), None)


# ---------------------------------------------------------------------------------------
# Discovery: metadata only


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

    kinds = list(kinds)
    found: list[PluginInfo] = []
    all_eps = entry_points()
    for kind in kinds:
        for ep in all_eps.select(group=GROUPS[kind]):
            if (kind, ep.name) in _in_process:
                continue
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
    for (kind, name), obj in _in_process.items():
        if kind in kinds:
            target = f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', type(obj).__qualname__)}"
            found.append(PluginInfo(kind, name, target, IN_PROCESS, "", is_enabled(kind, name)))
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


# ---------------------------------------------------------------------------------------
# Loading


def load(kind: str, name: str) -> Any:
    """Import the named plugin and return its object (classes are instantiated for
    doors and transports). Raises PluginError with a one-line reason."""
    if kind not in GROUPS:
        raise PluginError(f"unknown plugin kind {kind!r}")
    if not is_enabled(kind, name):
        raise _not_found(kind, name)
    if (kind, name) in _in_process:
        return _check_kind(kind, name, _in_process[(kind, name)])
    return _check_kind(kind, name, _import_entry_point(kind, name))


def _failed(kind: str, name: str, exc: BaseException) -> PluginError:
    return PluginError(f"{kind} {name!r} failed to load: {type(exc).__name__}: {exc}")


def _import_entry_point(kind: str, name: str) -> Any:
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
        return manager.driver
    except NoMatches:
        if failures:
            raise _failed(kind, name, failures[0]) from None
        raise _not_found(kind, name) from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - SystemExit at import too (stevedore lets it through)
        raise _failed(kind, name, failures[0] if failures else exc) from None


def _check_kind(kind: str, name: str, obj: Any) -> Any:
    if kind in ("backend", "store"):
        if not callable(obj):
            raise PluginError(f"{kind} {name!r} is not a factory: got {type(obj).__name__}, expected a callable")
        return obj
    if kind in ("door", "transport"):
        from ..composition import check_door, check_transport

        if inspect.isclass(obj):
            try:
                obj = obj()
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001
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
    """Discover and try to load every enabled plugin (for `onedoor plugins --check`):
    each gets ``error`` if it does not load, is the wrong kind of object, has a bad hook
    implementation or misses an installed requirement, and ``warnings`` for hook
    implementations that name no onedoor hook."""
    from .requirements import unmet_requirements

    infos = discover(kinds)
    unmet: dict[str, list[str]] = {}
    for info in infos:
        if not info.enabled:
            continue
        try:
            info.obj = load(info.kind, info.name)
            info.loaded = True
        except PluginError as exc:
            info.error = str(exc)
            continue
        if info.kind != "backend":  # backends are not registered with the hooks
            error, info.warnings = _hook_check(info.obj)
            if error:
                info.error = error
                continue
        if info.distribution != IN_PROCESS:
            if info.distribution not in unmet:
                unmet[info.distribution] = unmet_requirements(info.distribution)
            if unmet[info.distribution]:
                info.error = f"{info.distribution} needs {', '.join(unmet[info.distribution])}"
    return infos


# ---------------------------------------------------------------------------------------
# Hooks


def _new_plugin_manager() -> Any:
    import pluggy

    from .. import hookspecs

    pm = pluggy.PluginManager("onedoor")
    pm.add_hookspecs(hookspecs)
    return pm


def _register(pm: Any, obj: Any, label: str) -> tuple[str | None, list[str]]:
    """Register ``obj``'s hook implementations. Returns (error, unknown hooks): the error
    if pluggy refused one (then nothing of ``obj`` stays registered), and one line per
    implementation that names no onedoor hook. Raises nothing."""
    try:
        pm.register(obj, name=label)
    except Exception as exc:  # noqa: BLE001 - pluggy's validation error, or a broken attribute
        try:
            if pm.is_registered(obj):
                pm.unregister(obj)
        except Exception:  # noqa: BLE001
            pass
        return f"has a bad hook implementation: {exc}", []
    return None, unknown_hooks(pm, obj)


def unknown_hooks(pm: Any, obj: Any) -> list[str]:
    """One line per hook implementation of registered ``obj`` that names no hook
    specification (a misspelling such as ``onedoor_run_startd``), unless it was marked
    ``optionalhook=True``. Like pluggy's ``check_pending``, for one plugin."""
    unknown = [
        caller.name
        for caller in pm.get_hookcallers(obj) or []
        if not caller.has_spec() and not all(i.optionalhook for i in caller.get_hookimpls() if i.plugin is obj)
    ]
    if not unknown:
        return []
    import difflib

    known = sorted(name for name, caller in vars(pm.hook).items() if not name.startswith("_") and caller.has_spec())
    problems = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean {close[0]}?" if close else f"onedoor's hooks: {', '.join(known)}"
        problems.append(f"implements {name}, which is not a onedoor hook ({hint})")
    return problems


def _hook_check(obj: Any) -> tuple[str | None, list[str]]:
    """(error, unknown hooks) for ``obj``'s hook implementations, on a throwaway manager."""
    return _register(_new_plugin_manager(), obj, "checked")


def _report(message: str, strict: bool) -> None:
    if strict:
        raise PluginError(message)
    print(f"onedoor: warning: {message}", file=sys.stderr)


def plugin_manager(strict: bool | None = None) -> Any:
    """A pluggy PluginManager with the hookspecs and every enabled hook plugin.

    A hook plugin that fails to load or register, or that implements a hook onedoor does
    not have, is reported on stderr (raises PluginError in strict mode); the others
    still register.
    """
    strict = strict_mode() if strict is None else strict
    pm = _new_plugin_manager()
    hook_names = set(installed_hook_names()) | {name for kind, name in _in_process if kind == "hook"}
    for name in sorted(hook_names):
        if not is_enabled("hook", name):
            continue
        try:
            obj = load("hook", name)
        except PluginError as exc:
            _report(str(exc), strict)
            continue
        error, unknown = _register(pm, obj, f"hook:{name}")
        for problem in ([error] if error else []) + unknown:
            _report(f"hook {name!r} {problem}", strict)
    return pm


def installed_hook_names() -> list[str]:
    """Names in the hooks group, read from stevedore's entry-point cache (which loading
    through stevedore reads anyway) rather than by a second scan of every installed
    distribution. ``make_test_instance`` builds a manager that loads nothing; its public
    ``list_entry_points`` reads the cache."""
    from stevedore import ExtensionManager

    manager: Any = ExtensionManager.make_test_instance([], namespace=GROUPS["hook"])
    return sorted({ep.name for ep in manager.list_entry_points()})


def register_hooks(pm: Any, kind: str, name: str, obj: Any) -> None:
    """Let a loaded door/transport/backend implement hooks too; its problems are
    reported as for hook plugins."""
    if pm is None or pm.is_registered(obj):
        return
    error, unknown = _register(pm, obj, f"{kind}:{name}")
    for problem in ([error] if error else []) + unknown:
        _report(f"{kind} {name!r} {problem}", strict_mode())


def make_backend(name: str, *, cli: dict[str, Any] | None = None, file: dict[str, Any] | None = None) -> Any:
    """Load a backend and validate its options now, before any server starts."""
    from ..run.model import Backend
    from .options import parse_options

    factory = load("backend", name)
    options_type = getattr(factory, "Options", None)
    options = parse_options(options_type, name, cli=cli, file=file)
    capabilities = frozenset(getattr(factory, "capabilities", ()) or ())
    accepts = backend_accepts(factory, name, options)
    if options_type is None:
        return Backend(name, factory, capabilities, accepts), None
    return Backend(name, lambda: factory(options), capabilities, accepts), options


def backend_accepts(factory: Any, name: str, options: Any = None) -> frozenset[str]:
    """The content kinds a backend's factory declares it takes besides text: its
    ``accepts`` attribute, a collection of kinds or a callable of its options (what a model
    takes can depend on which model it is)."""
    from ..content import ALL_KINDS

    declared = getattr(factory, "accepts", ()) or ()
    if callable(declared):
        declared = declared(options) or ()
    kinds = frozenset(str(kind) for kind in declared)
    unknown = kinds - ALL_KINDS
    if unknown:
        raise PluginError(f"backend {name!r} declares content kinds onedoor does not know: {', '.join(sorted(unknown))}")
    return kinds
