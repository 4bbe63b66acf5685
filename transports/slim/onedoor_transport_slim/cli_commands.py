"""CLI commands added by the SLIM transport (pluggy hook ``onedoor_cli``).

Light on purpose: hook modules are imported by every command.

    onedoor slim-node [--endpoint unix:///path]
    onedoor ask --transport slim NAME "message" [-o secret_file=…] [-o endpoint=…]
"""

from __future__ import annotations

from typing import List, Optional

from onedoor import hookimpl


def _options(pairs: list[str], defaults: dict | None = None, **extra: str | None) -> object:
    from onedoor.plugins.options import load_config_file, parse_options, split_cli_options

    from .options import SlimOptions

    scoped = split_cli_options(pairs)
    values = {**scoped.pop("", {}), **scoped.pop("slim", {})}
    if scoped:
        from onedoor import OptionsError

        raise OptionsError(f"unknown option scope(s) {', '.join(sorted(scoped))}: write slim.NAME=… or NAME=…")
    values.update({k: v for k, v in extra.items() if v is not None})
    table = load_config_file(None).get("options", {}).get("slim", {})  # ./onedoor.toml, if any
    return parse_options(SlimOptions, "slim", cli=values, file={**(defaults or {}), **table})


@hookimpl
def onedoor_cli(app: object) -> None:
    import typer

    @app.command("slim-node")  # type: ignore[attr-defined]
    def slim_node(
        endpoint: Optional[str] = typer.Option(None, "--endpoint", help="where to listen (default: a unix socket in the runtime dir)"),
        option: Optional[List[str]] = typer.Option(None, "--option", "-o", help="SLIM option NAME=VALUE (log_level, tls_cert_file, tls_key_file)"),
    ) -> None:
        """Run a SLIM node for this host (workers and clients connect to it)."""
        from .node import run_node

        raise typer.Exit(run_node(_options(list(option or []), endpoint=endpoint)))  # type: ignore[arg-type]

    @app.command("ask")  # type: ignore[attr-defined]
    def ask(
        name: str = typer.Argument(..., help="SLIM name of the MCP door (org/namespace/agent)"),
        message: str = typer.Argument(..., help="what to ask ('-' reads stdin)"),
        transport: str = typer.Option("slim", "--transport", "-t", help="transport to reach the door (slim)"),
        option: Optional[List[str]] = typer.Option(None, "--option", "-o", help="SLIM option NAME=VALUE (endpoint, secret_file, mls…)"),
        timeout: float = typer.Option(600.0, "--timeout", help="seconds to wait for the answer"),
    ) -> None:
        """Ask an MCP door over SLIM: calls its `ask` tool and streams the progress."""
        import sys

        if transport != "slim":
            print(f"onedoor ask: only --transport slim is supported here, not {transport!r}", file=sys.stderr)
            raise typer.Exit(2)
        if message == "-":
            from onedoor.cli import read_stdin_message

            message = read_stdin_message()
        from .ask import run_ask

        raise typer.Exit(run_ask(name, message, _options(list(option or []), {"probe_interval": 5.0, "probe_timeout": 5.0}, name=name), timeout=timeout))  # type: ignore[arg-type]
