"""The ``onedoor`` command line.

Every failure is one line on stderr and a non-zero exit (2 for usage and configuration
problems, 1 for a failed run, 130 for a cancelled one), never a traceback. Commands
import only what they use: `onedoor run` never imports a server library.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List

import typer

from . import __version__
from .errors import OnedoorError

app = typer.Typer(
    name="onedoor",
    help="One agent, every door: terminal, REST, AG-UI, MCP, ACP over stdio, HTTP or SLIM.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

OptionPairs = typer.Option(
    None, "--option", "-o", help="plugin option NAME=VALUE (or PLUGIN.NAME=VALUE, limits.NAME=VALUE); repeatable"
)
ConfigPath = typer.Option(None, "--config", help="config file (default: ./onedoor.toml if present)")
BackendName = typer.Option(None, "--backend", "-b", help="backend plugin (default: scripted)")


def _version(value: bool) -> None:
    if value:
        print(f"onedoor {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="show the version"),
) -> None:
    """One agent, every door."""


@app.command()
def run(
    message: str = typer.Argument(..., help="what to say to the agent ('-' reads stdin)"),
    backend: str | None = BackendName,
    json_lines: bool = typer.Option(False, "--json", help="print every event as one JSON object a line"),
    reasoning: bool = typer.Option(False, "--reasoning", help="show the agent's reasoning on stderr"),
    option: List[str] | None = OptionPairs,
    config: Path | None = ConfigPath,
) -> None:
    """Send one message and stream the reply as it is written."""
    import asyncio

    from .builtins.terminal import run_once
    from .serve import kernel_for

    if message == "-":
        message = sys.stdin.read()
    kernel = kernel_for(backend, option or [], config)
    code = asyncio.run(run_once(kernel, message, json_lines=json_lines, show_reasoning=reasoning))
    raise typer.Exit(code)


@app.command()
def chat(
    backend: str | None = BackendName,
    option: List[str] | None = OptionPairs,
    config: Path | None = ConfigPath,
) -> None:
    """Talk to the agent in this terminal, keeping the conversation
    (the same as `onedoor serve --door terminal --transport stdio`)."""
    from .serve import Settings
    from .serve import serve as do_serve

    settings = Settings(doors=["terminal"], transport="stdio", backend=backend, options=option or [], config=config)
    raise typer.Exit(do_serve(settings))


@app.command()
def serve(
    door: List[str] | None = typer.Option(None, "--door", "-d", help="door to serve; repeatable (default: rest, agui, mcp)"),
    transport: str | None = typer.Option(None, "--transport", "-t", help="transport (default: http)"),
    backend: str | None = BackendName,
    host: str | None = typer.Option(None, "--host", help="address to bind (http; default 127.0.0.1)"),
    port: int | None = typer.Option(None, "--port", help="port to bind (http; default 8000)"),
    token: str | None = typer.Option(None, "--token", help="bearer token every request must carry (http)"),
    option: List[str] | None = OptionPairs,
    config: Path | None = ConfigPath,
) -> None:
    """Serve the agent through one or more doors over a transport."""
    from .serve import Settings
    from .serve import serve as do_serve

    pairs = list(option or [])
    for name, value in (("host", host), ("port", port), ("token", token)):
        if value is not None:
            pairs.append(f"{name}={value}")
    settings = Settings(doors=list(door or []), transport=transport, backend=backend, options=pairs, config=config)
    raise typer.Exit(do_serve(settings))


@app.command()
def plugins(
    check: bool = typer.Option(False, "--check", help="also import every plugin and report the broken ones"),
    show_options: bool = typer.Option(False, "--options", help="list each plugin's options"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """List installed backends, doors, transports and hooks (reads metadata; imports
    nothing unless --check or --options)."""
    import json

    from . import plugins as plugin_registry
    from .options import describe

    infos = plugin_registry.check_all() if (check or show_options) else plugin_registry.discover()
    option_rows: dict[tuple[str, str], list] = {}
    if show_options:
        for info in infos:
            if info.loaded and info.kind != "hook":
                obj = plugin_registry.load(info.kind, info.name)
                option_rows[(info.kind, info.name)] = describe(getattr(obj, "Options", None))
    broken = [i for i in infos if i.error]
    if as_json:
        print(json.dumps([
            {
                "kind": i.kind, "name": i.name, "target": i.target, "distribution": i.distribution,
                "version": i.version, "enabled": i.enabled, "error": i.error,
                **({"options": [list(r) for r in option_rows.get((i.kind, i.name), [])]} if show_options else {}),
            }
            for i in infos
        ], indent=2))
    else:
        kind = None
        for info in infos:
            if info.kind != kind:
                kind = info.kind
                print(f"{kind}s:")
            state = "" if info.enabled else "  (disabled)"
            if info.error:
                state = f"  BROKEN: {info.error}"
            elif check and info.loaded:
                state = "  ok"
            print(f"  {info.name:<14} {info.distribution} {info.version}{state}")
            for name, default, help_text in option_rows.get((info.kind, info.name), []):
                print(f"      -o {name}={default}  {help_text}")
    if broken and plugin_registry.strict_mode():
        raise typer.Exit(1)


def _add_plugin_commands() -> None:
    """Let hook plugins add commands (pluggy hook ``onedoor_cli``)."""
    if len(sys.argv) > 1 and sys.argv[1] in ("run", "plugins", "chat", "serve", "--version"):
        return  # built-in commands: do not pay for loading hook plugins twice
    from .plugins import plugin_manager

    plugin_manager().hook.onedoor_cli(app=app)


def main() -> None:
    try:
        _add_plugin_commands()
        code = app(standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except OnedoorError as exc:
        print(f"onedoor: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("onedoor: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # click usage errors and the like
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if isinstance(exc, click.exceptions.Abort):
            sys.exit(130)
        raise


if __name__ == "__main__":
    main()
