"""The ``onedoor acp`` command (pluggy hook ``onedoor_cli``): what an editor launches.

Same as ``onedoor serve --door acp --transport stdio``. Imports nothing heavy.
"""

from __future__ import annotations

from typing import Any, List, Optional

from onedoor import hookimpl


@hookimpl
def onedoor_cli(app: Any) -> None:
    import typer

    @app.command("acp")
    def acp_command(
        backend: Optional[str] = typer.Option(None, "--backend", "-b", help="backend plugin (default: scripted)"),
        option: Optional[List[str]] = typer.Option(
            None, "--option", "-o", help="plugin option NAME=VALUE (or PLUGIN.NAME=VALUE); repeatable"
        ),
        config: Optional[str] = typer.Option(None, "--config", help="config file (default: ./onedoor.toml)"),
        store: Optional[str] = typer.Option(
            None, "--store", help="thread store plugin (default: sqlite); 'none': the door keeps its own sessions"
        ),
    ) -> None:
        """Serve the agent to an editor over ACP on stdio
        (the same as `onedoor serve --door acp --transport stdio`)."""
        from pathlib import Path

        from onedoor.plugins.serve import Settings, serve

        settings = Settings(
            doors=["acp"],
            transport="stdio",
            backend=backend,
            store=store,
            options=list(option or []),
            config=Path(config) if config else None,
        )
        raise typer.Exit(serve(settings))


def main() -> None:
    """The ``onedoor-door-acp`` script (what ``uvx onedoor-door-acp`` runs): ``onedoor acp``."""
    import sys

    from onedoor.cli import main as onedoor_main

    sys.argv = [sys.argv[0], "acp", *sys.argv[1:]]
    onedoor_main()
