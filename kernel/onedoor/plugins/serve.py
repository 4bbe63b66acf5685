"""Serve time: pick doors and a transport, check they fit, build the kernel, serve.

Everything is validated before anything starts: plugin names, the door/transport
combination, every plugin's options and the backend's. A problem is one
:class:`OnedoorError` with a message that says what to do.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CompositionError, OptionsError, PluginError
from ..kernel import Kernel
from ..limits import Limits
from ..observe import notify
from ..threads.stores import DEFAULT_STORE, NO_STORE
from . import discovery as plugins
from .options import (
    coerce_value,
    field_types,
    load_config_file,
    option_fields,
    parse_options,
    split_cli_options,
)

if TYPE_CHECKING:
    from ..composition import ServeContext

DEFAULT_BACKEND = "scripted"
DEFAULT_HTTP_DOORS = ("agui", "rest", "mcp", "a2a")  # the chat page first: `/` leads to it


@dataclass
class Settings:
    """What the CLI collected: names, raw option pairs and the config file."""

    doors: list[str] = field(default_factory=list)
    transport: str | None = None
    backend: str | None = None
    store: str | None = None  # a thread store plugin, or "none"
    options: list[str] = field(default_factory=list)  # "scope.name=value" or "name=value"
    config: Path | None = None


def _file_options(config: dict[str, Any], plugin: str) -> dict[str, Any]:
    """The ``[options.PLUGIN]`` table of onedoor.toml."""
    table = config.get("options", {}).get(plugin, {})
    if not isinstance(table, dict):
        raise OptionsError(f"onedoor.toml: [options.{plugin}] must be a table")
    return table


def build_limits(values: dict[str, Any]) -> Limits:
    known = {f.name for f in fields(Limits)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise OptionsError(f"unknown limit {unknown[0]!r}; known limits: {', '.join(sorted(known))}")
    types = field_types(Limits)
    return Limits(**{k: coerce_value(v, types[k], f"limit {k!r}") for k, v in values.items()})


def default_doors() -> list[Any]:
    """The installed doors of :data:`DEFAULT_HTTP_DOORS`, for a serve that names none.

    A default door that fails to load is skipped with a warning (an error in strict
    mode): the user did not ask for it by name, and the others still serve.
    """
    installed = plugins.names("door")
    doors = []
    for name in (n for n in DEFAULT_HTTP_DOORS if n in installed):
        try:
            doors.append(plugins.load("door", name))
        except PluginError as exc:
            if plugins.strict_mode():
                raise
            print(f"onedoor: warning: skipping the default door {name!r}: {exc}", file=sys.stderr)
    if not doors:
        raise CompositionError(
            "no HTTP door is installed" + (" that loads" if installed else "")
            + "; install one, e.g. pip install onedoor-door-rest onedoor-door-agui"
        )
    return doors


def transports_by_shape() -> dict[str, list[str]]:
    """Installed, loadable transports grouped by the shapes they offer."""
    from ..composition import offered_shapes

    out: dict[str, list[str]] = {}
    for name in plugins.names("transport"):
        try:
            obj = plugins.load("transport", name)
        except PluginError:
            continue
        for shape in offered_shapes(obj):
            out.setdefault(shape, []).append(name)
    return out


def _route_options(
    pairs: list[str], declared: dict[str, Any]
) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Send each -o pair to its plugin: explicit scope, or the one plugin declaring it."""
    scoped = split_cli_options(pairs)
    per_plugin: dict[str, dict[str, str]] = {name: {} for name in declared}
    limits: dict[str, str] = dict(scoped.pop("limits", {}))
    for scope, values in scoped.items():
        if scope == "":
            for key, value in values.items():
                owners = [
                    name for name, otype in declared.items()
                    if key.replace("-", "_") in {f.name for f in option_fields(otype)}
                ]
                if key.replace("-", "_") in {f.name for f in fields(Limits)} and not owners:
                    limits[key] = value
                    continue
                if not owners:
                    raise OptionsError(
                        f"no chosen plugin takes option {key!r} (plugins: {', '.join(declared) or 'none'}); "
                        "see `onedoor plugins --options`"
                    )
                if len(owners) > 1:
                    raise OptionsError(
                        f"option {key!r} is taken by {', '.join(owners)}: write it as {owners[0]}.{key}=…"
                    )
                per_plugin[owners[0]][key] = value
        else:
            name = scope
            if name not in per_plugin:
                raise OptionsError(f"option scope {scope!r} names no chosen plugin ({', '.join(declared)})")
            per_plugin[name].update(values)
    return per_plugin, limits


@dataclass
class Plan:
    """A validated serve plan, ready to start."""

    transport: Any
    doors: list[Any]
    ctx: "ServeContext"


def plan_serve(settings: Settings, *, default_transport: str = "http") -> Plan:
    from ..composition import ServeContext, validate_combination

    config = load_config_file(settings.config)
    door_names = list(dict.fromkeys(settings.doors))
    transport_name = settings.transport or config.get("transport")
    if not door_names and config.get("doors"):
        door_names = list(config["doors"])
    if transport_name is None:
        transport_name = default_transport
    transport = plugins.load("transport", transport_name)
    early = getattr(transport, "early", None)
    if callable(early):  # before any door or hook module is imported (stdio guards stdout here)
        early()
    if door_names:
        doors = [plugins.load("door", name) for name in door_names]
    elif transport.shape != "asgi":
        raise CompositionError(f"name a door to serve over {transport_name!r}: --door NAME")
    else:
        doors = default_doors()
    validate_combination(doors, transport, transports_by_shape())
    backend_name = settings.backend or config.get("backend") or DEFAULT_BACKEND

    store_name = settings.store or config.get("store") or DEFAULT_STORE

    # Options: every chosen plugin, plus the backend and the store.
    backend_factory = plugins.load("backend", backend_name)
    declared: dict[str, Any] = {transport_name: getattr(transport, "Options", None)}
    for door in doors:
        declared[door.name] = getattr(door, "Options", None)
    declared[backend_name] = getattr(backend_factory, "Options", None)
    if store_name != NO_STORE:
        declared[store_name] = getattr(plugins.load("store", store_name), "Options", None)
    pairs = list(settings.options)
    scoped_pairs = []
    for pair in pairs:  # "backend.x=…" means the chosen backend
        if pair.startswith("backend."):
            pair = f"{backend_name}." + pair[len("backend.") :]
        scoped_pairs.append(pair)
    per_plugin, limit_values = _route_options(scoped_pairs, declared)
    limits = build_limits({**config.get("limits", {}), **limit_values})

    parsed: dict[str, Any] = {}
    for name in [transport_name] + [d.name for d in doors]:
        parsed[name] = parse_options(declared[name], name, cli=per_plugin.get(name), file=_file_options(config, name))
    backend, backend_options = plugins.make_backend(
        backend_name, cli=per_plugin.get(backend_name), file=_file_options(config, backend_name)
    )
    parsed[backend_name] = backend_options
    store = make_store(store_name, cli=per_plugin.get(store_name), file=_file_options(config, store_name))

    pm = plugins.plugin_manager()
    for door in doors:
        plugins.register_hooks(pm, "door", door.name, door)
    plugins.register_hooks(pm, "transport", transport_name, transport)
    kernel = Kernel(backend, limits=limits, hooks=pm.hook, store=store)
    ctx = ServeContext(
        kernel=kernel,
        options=parsed,
        door_names=[d.name for d in doors],
        transport_name=transport_name,
        hooks=pm.hook,
    )
    return Plan(transport, doors, ctx)


def serve(settings: Settings) -> int:
    plan = plan_serve(settings)
    prepare = getattr(plan.transport, "prepare", None)
    if callable(prepare):
        prepare(plan.ctx.options_for(plan.transport.name))
    notify(plan.ctx.hooks, "onedoor_serving", ctx=plan.ctx)
    try:
        return int(plan.transport.serve(plan.doors, plan.ctx) or 0)
    finally:
        close_store(plan.ctx.kernel.store)


def make_store(name: str, *, cli: dict[str, Any] | None = None, file: dict[str, Any] | None = None) -> Any:
    """Load the store plugin ``name`` and build the store (``None`` for ``none``); its
    options are checked now, before any server starts. Nothing is opened until first use."""
    if name == NO_STORE:
        return None
    factory = plugins.load("store", name)
    options_type = getattr(factory, "Options", None)
    options = parse_options(options_type, name, cli=cli, file=file)
    return factory(options) if options_type is not None else factory()


def close_store(store: Any) -> None:
    """Close a store after its server's event loop has ended (its connections, threads)."""
    if store is not None:
        import asyncio

        asyncio.run(store.close())


def kernel_for(
    backend_name: str | None, option_pairs: list[str], config_path: Path | None = None, *, store: bool = False
) -> Kernel:
    """A kernel for one-shot use (`onedoor run`): backend + its options + limits + hooks;
    with ``store``, the configured thread store too (``store = …`` in onedoor.toml, else
    the default; its options as ``-o STORE.name=value``)."""
    config = load_config_file(config_path)
    name = backend_name or config.get("backend") or DEFAULT_BACKEND
    store_name = (config.get("store") or DEFAULT_STORE) if store else NO_STORE
    store_values: dict[str, str] = {}
    backend_values: dict[str, str] = {}
    limit_values: dict[str, str] = {}
    for scope, values in split_cli_options(option_pairs).items():
        if scope == store_name:
            store_values.update(values)
        elif scope in ("", "backend", name):
            for key, value in values.items():
                if scope == "" and key in {f.name for f in fields(Limits)}:
                    limit_values[key] = value
                else:
                    backend_values[key] = value
        elif scope == "limits":
            limit_values.update(values)
        else:
            raise OptionsError(f"option scope {scope!r} names no chosen plugin (backend {name!r})")
    backend, _ = plugins.make_backend(name, cli=backend_values, file=_file_options(config, name))
    limits = build_limits({**config.get("limits", {}), **limit_values})
    thread_store = make_store(store_name, cli=store_values, file=_file_options(config, store_name))
    pm = plugins.plugin_manager()
    return Kernel(backend, limits=limits, hooks=pm.hook, store=thread_store)
