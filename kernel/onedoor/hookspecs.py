"""The declared hooks: the only ones onedoor calls. Implement them with ``hookimpl``.

A plugin registered in the ``onedoor.hooks`` entry-point group (a module or object),
and any loaded door, transport or backend object, may implement these::

    from onedoor.hookspecs import hookimpl

    @hookimpl
    def onedoor_run_finished(run, outcome):
        print(run.run_id, type(outcome).__name__, file=sys.stderr)

Hook modules are imported on every command: import nothing heavy at module level.
Exceptions raised by the run observers are logged and never break a run.
"""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("onedoor")
hookimpl = pluggy.HookimplMarker("onedoor")


@hookspec
def onedoor_run_started(run: Any) -> None:
    """A run began. ``run`` is an :class:`onedoor.kernel.RunInfo` (run_id, backend, door,
    message, history_length, started_at). Called on the event loop: keep it quick."""


@hookspec
def onedoor_run_finished(run: Any, outcome: Any) -> None:
    """A run ended: ``outcome`` is its RunFinished (stop_reason end_turn, cancelled…) or
    RunFailed. Called exactly once for every run that started."""


@hookspec
def onedoor_cli(app: Any) -> None:
    """Add commands to the ``onedoor`` CLI. ``app`` is the root :class:`typer.Typer`.
    Import what a command needs inside the command, not at module level."""


@hookspec
def onedoor_http_app(app: Any, ctx: Any) -> None:
    """Configure the shared HTTP application before it serves (add routes or
    middleware). ``app`` is the Starlette app every asgi door is mounted on; ``ctx`` is
    the :class:`onedoor.composition.ServeContext`. Authentication stays in force: the
    transport wraps whatever is added here."""
