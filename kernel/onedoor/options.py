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
 Unknown names, missing required values and
malformed values are errors with a one-line message. Fields marked ``secret`` are never
shown: use :func:`redacted`.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path
from typing import Any, Mapping

from .errors import OptionsError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_prefix(plugin: str) -> str:
    return "ONEDOOR_" + plugin.upper().replace("-", "_").replace(".", "_") + "_"


def option_fields(options_type: Any) -> list[dataclasses.Field]:
    if options_type is None:
        return []
    return [f for f in dataclasses.fields(options_type) if f.init]


def _hints(options_type: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(options_type)
    except Exception:  # noqa: BLE001 - fall back to raw annotations
        return {f.name: f.type for f in dataclasses.fields(options_type)}


def _coerce(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        non_none = [a for a in args if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("", "none", "null")):
            if len(non_none) != len(args):
                return None
        last: OptionsError | None = None
        for arg in non_none:
            try:
                return _coerce(value, arg, where)
            except OptionsError as exc:
                last = exc
        raise last or OptionsError(f"{where}: bad value {value!r}")
    if origin in (list, tuple):
        item = args[0] if args else str
        if isinstance(value, str):
            items = [v.strip() for v in value.split(",") if v.strip()]
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            raise OptionsError(f"{where}: expected a list, got {value!r}")
        out = [_coerce(v, item, where) for v in items]
        return tuple(out) if origin is tuple else out
    if hint is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise OptionsError(f"{where}: expected true or false, got {value!r}")
    if hint is int:
        if isinstance(value, bool):
            raise OptionsError(f"{where}: expected a whole number, got {value!r}")
        try:
            return int(value)
        except (TypeError, ValueError):
            raise OptionsError(f"{where}: expected a whole number, got {value!r}") from None
    if hint is float:
        try:
            return float(value)
        except (TypeError, ValueError):
            raise OptionsError(f"{where}: expected a number, got {value!r}") from None
    if hint is Path:
        return Path(str(value)).expanduser()
    if hint is str:
        if isinstance(value, (dict, list)):
            raise OptionsError(f"{where}: expected text, got {value!r}")
        return str(value)
    if typing.get_origin(hint) is typing.Literal:
        if value not in args:
            raise OptionsError(f"{where}: expected one of {', '.join(map(str, args))}, got {value!r}")
        return value
    return value


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
    hints = _hints(options_type)
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
        kwargs[f.name] = _coerce(raw, hints.get(f.name, str), where)
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
    return data


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
