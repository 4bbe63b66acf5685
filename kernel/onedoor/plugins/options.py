"""One way to configure any plugin: flags, environment variables and ``onedoor.toml``.

A plugin declares its options as a dataclass named ``Options`` on the plugin object::

    @dataclass
    class Options:
        base_url: str = field(metadata={"help": "model server URL"})
        api_key: str = field(default="", metadata={"help": "API key", "secret": True})
        delay: float = 0.0

Values come from (highest first): ``-o name=value`` on the command line (``-o
backend.delay=0.1`` to be explicit), environment variables ``ONEDOOR_<PLUGIN>_<NAME>``
(``ONEDOOR_SCRIPTED_DELAY``), and the file ``onedoor.toml``::

    backend = "scripted"          # top level: which backend, transport and doors
    transport = "http"
    doors = ["rest", "agui"]
    [options.scripted]            # one table per plugin name
    delay = 0.05
    [limits]                      # the kernel's Limits
    max_concurrent_runs = 32

Unknown names, missing required values and malformed values (of the wrong TOML type
too) are errors with a one-line message. Fields marked ``secret`` are never
shown: use :func:`redacted`.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from pathlib import Path
from typing import Any, Mapping

from ..errors import OptionsError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_prefix(plugin: str) -> str:
    return "ONEDOOR_" + plugin.upper().replace("-", "_").replace(".", "_") + "_"


def option_fields(options_type: Any) -> list[dataclasses.Field]:
    if options_type is None:
        return []
    return [f for f in dataclasses.fields(options_type) if f.init]


def field_types(options_type: Any) -> dict[str, Any]:
    """The resolved type of each field of an options dataclass (raw annotations if they
    cannot be resolved)."""
    try:
        return typing.get_type_hints(options_type)
    except Exception:  # noqa: BLE001 - fall back to raw annotations
        return {f.name: f.type for f in dataclasses.fields(options_type)}


def coerce_value(value: Any, hint: Any, where: str) -> Any:
    """Turn ``value`` (text from a flag or the environment, or a TOML value) into the type
    ``hint``; an :class:`OptionsError` naming ``where`` if it does not fit."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return _to_union(value, typing.get_args(hint), where)
    if origin in (list, tuple):
        return _to_sequence(value, origin, typing.get_args(hint), where)
    if origin is typing.Literal:
        args = typing.get_args(hint)
        if value not in args:
            raise OptionsError(f"{where}: expected one of {', '.join(map(str, args))}, got {value!r}")
        return value
    convert = _SCALARS.get(hint)
    return convert(value, where) if convert else value


def _to_union(value: Any, args: tuple[Any, ...], where: str) -> Any:
    non_none = [a for a in args if a is not type(None)]
    if value is None or (isinstance(value, str) and value.lower() in ("", "none", "null")):
        if len(non_none) != len(args):
            return None
    last: OptionsError | None = None
    for arg in non_none:
        try:
            return coerce_value(value, arg, where)
        except OptionsError as exc:
            last = exc
    raise last or OptionsError(f"{where}: bad value {value!r}")


def _to_sequence(value: Any, origin: Any, args: tuple[Any, ...], where: str) -> Any:
    item = args[0] if args else str
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise OptionsError(f"{where}: expected a list, got {value!r}")
    out = [coerce_value(v, item, where) for v in items]
    return tuple(out) if origin is tuple else out


def _to_bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise OptionsError(f"{where}: expected true or false, got {value!r}")


def _to_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise OptionsError(f"{where}: expected a whole number, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise OptionsError(f"{where}: expected a whole number, got {value!r}") from None


def _to_float(value: Any, where: str) -> float:
    if isinstance(value, bool):
        raise OptionsError(f"{where}: expected a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise OptionsError(f"{where}: expected a number, got {value!r}") from None


def _to_path(value: Any, where: str) -> Path:
    if isinstance(value, (dict, list)):
        raise OptionsError(f"{where}: expected a path, got {value!r}")
    return Path(str(value)).expanduser()


def _to_str(value: Any, where: str) -> str:
    if isinstance(value, (dict, list)):
        raise OptionsError(f"{where}: expected text, got {value!r}")
    return str(value)


_SCALARS: dict[Any, Any] = {bool: _to_bool, int: _to_int, float: _to_float, Path: _to_path, str: _to_str}


def parse_options(
    options_type: Any,
    plugin: str,
    *,
    cli: Mapping[str, Any] | None = None,
    file: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Any:
    """Build the plugin's Options from the three sources; None if it declares none."""
    cli = dict(cli or {})
    file = dict(file or {})
    environ = os.environ if environ is None else environ
    if options_type is None:
        extra = sorted(set(cli) | set(file))
        if extra:
            raise OptionsError(f"{plugin!r} takes no options, but got: {', '.join(extra)}")
        return None
    fields = option_fields(options_type)
    names = {f.name for f in fields}
    for source, values in (("command line", cli), ("onedoor.toml", file)):
        unknown = sorted(k for k in values if k.replace("-", "_") not in names)
        if unknown:
            known = ", ".join(sorted(names)) or "none"
            raise OptionsError(f"unknown option {unknown[0]!r} for {plugin!r} (from the {source}); known options: {known}")
    hints = field_types(options_type)
    prefix = env_prefix(plugin)
    kwargs: dict[str, Any] = {}
    normalized_cli = {k.replace("-", "_"): v for k, v in cli.items()}
    normalized_file = {k.replace("-", "_"): v for k, v in file.items()}
    for f in fields:
        where = f"option {f.name!r} of {plugin!r}"
        if f.name in normalized_cli:
            raw = normalized_cli[f.name]
        elif prefix + f.name.upper() in environ:
            raw = environ[prefix + f.name.upper()]
        elif f.name in normalized_file:
            raw = normalized_file[f.name]
        else:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:  # type: ignore[misc]
                raise OptionsError(
                    f"{where} is required: pass -o {f.name}=… or set {prefix}{f.name.upper()}"
                )
            continue
        kwargs[f.name] = coerce_value(raw, hints.get(f.name, str), where)
    try:
        instance = options_type(**kwargs)
    except (TypeError, ValueError) as exc:
        raise OptionsError(f"options of {plugin!r}: {exc}") from None
    return instance


def redacted(options: Any) -> dict[str, Any]:
    """The options as a dict with secret fields replaced by '***'."""
    if options is None:
        return {}
    out = {}
    for f in option_fields(type(options)):
        value = getattr(options, f.name)
        out[f.name] = "***" if f.metadata.get("secret") and value else value
    return out


def describe(options_type: Any) -> list[tuple[str, str, str]]:
    """(name, default, help) for each option, for `onedoor plugins --options`."""
    rows = []
    for f in option_fields(options_type):
        if f.default is not dataclasses.MISSING:
            default = "" if f.metadata.get("secret") else repr(f.default)
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = "(computed)"
        else:
            default = "(required)"
        rows.append((f.name, default, f.metadata.get("help", "")))
    return rows


def load_config_file(path: Path | None) -> dict[str, Any]:
    """Read onedoor.toml (the given path, or ./onedoor.toml if it exists)."""
    if path is None:
        path = Path("onedoor.toml")
        if not path.is_file():
            return {}
    import tomllib
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise OptionsError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptionsError(f"config file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise OptionsError(f"config file {path} is not UTF-8 text") from None
    except OSError as exc:
        raise OptionsError(f"config file {path} cannot be read: {exc.strerror or exc}") from None
    check_config(data, path)
    return data


def check_config(data: Mapping[str, Any], path: Path | str = "onedoor.toml") -> None:
    """Check the types of the keys onedoor reads from the top of onedoor.toml (the values
    inside ``[options.*]`` and ``[limits]`` are checked when they are parsed)."""
    for key in ("backend", "transport", "store"):
        if key in data and not isinstance(data[key], str):
            raise OptionsError(f"{path}: {key} must be a name in quotes, got {data[key]!r}")
    doors = data.get("doors")
    if doors is not None and not (isinstance(doors, list) and all(isinstance(d, str) for d in doors)):
        raise OptionsError(f'{path}: doors must be a list of names, like doors = ["rest", "agui"]; got {doors!r}')
    for key in ("options", "limits"):
        if key in data and not isinstance(data[key], dict):
            raise OptionsError(f"{path}: {key} must be a table ([{key}]), got {data[key]!r}")
    for plugin, table in data.get("options", {}).items():
        if not isinstance(table, dict):
            raise OptionsError(f"{path}: options.{plugin} must be a table ([options.{plugin}]), got {table!r}")


def split_cli_options(pairs: list[str]) -> dict[str, dict[str, str]]:
    """Turn ``["backend.delay=0.1", "token=x"]`` into ``{"backend": {...}, "": {...}}``."""
    out: dict[str, dict[str, str]] = {}
    for pair in pairs:
        if "=" not in pair:
            raise OptionsError(f"option {pair!r} must look like name=value")
        key, value = pair.split("=", 1)
        key = key.strip()
        scope, _, name = key.rpartition(".")
        if not name:
            raise OptionsError(f"option {pair!r} has no name")
        out.setdefault(scope, {})[name] = value
    return out
