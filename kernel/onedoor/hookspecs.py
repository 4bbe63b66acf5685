"""The declared hooks: the only ones onedoor calls. Implement them with ``hookimpl``.

A plugin registered in the ``onedoor.hooks`` entry-point group (a module or object),
and any loaded door, transport or backend object, may implement these::

    from onedoor.hookspecs import hookimpl

    @hookimpl
    def onedoor_run_finished(run, outcome):
        print(run.run_id, type(outcome).__name__, file=sys.stderr)

They are ordinary pluggy hooks: ``tryfirst``/``trylast`` order them, and a
``@hookimpl(wrapper=True)`` generator wraps the other implementations (for example to
time them, or to set up a tracing span around them)::

    @hookimpl(wrapper=True)
    def onedoor_run_finished(run, outcome):
        started = time.perf_counter()
        result = yield
        log.debug("observers took %.3f s", time.perf_counter() - started)
        return result

Hook modules are imported on every command: import nothing heavy at module level.
The run observers (``onedoor_run_started``, ``onedoor_run_finished``) are fenced in:
an exception one of them raises is logged and never breaks a run, nor stops the other
observers from being called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .composition import ServeContext
    from .events import RunFailed, RunFinished
    from .run.model import RunInfo

hookspec = pluggy.HookspecMarker("onedoor")
hookimpl = pluggy.HookimplMarker("onedoor")


@hookspec
def onedoor_run_started(run: RunInfo) -> None:
    """A run began, before its first event reaches the door.

    ``run`` is a :class:`onedoor.kernel.RunInfo`: ``run_id``, ``backend``, ``door``,
    ``message``, ``history_length``, ``started_at`` (a ``time.time()``). Called on the
    event loop that drives the run: keep it quick, and hand slow work to a thread or task.
    """


@hookspec
def onedoor_run_finished(run: RunInfo, outcome: RunFinished | RunFailed) -> None:
    """A run ended; called exactly once for every run that ``onedoor_run_started`` saw.

    ``outcome`` is the terminal event the door received: a RunFinished (its
    ``stop_reason`` is ``end_turn``, ``cancelled``, ``max_turns``, ``pending_tools``…) or a
    RunFailed (its ``error`` says why). A run whose consumer went away ends cancelled.
    Called on the run's event loop: keep it quick.
    """


@hookspec
def onedoor_cli(app: Any) -> None:
    """Add commands to the ``onedoor`` command line.

    ``app`` is the root :class:`typer.Typer`; add commands with ``@app.command()``.
    Called when the CLI starts, unless the command line names a built-in command:
    import what a command needs inside the command, not at module level.
    """


@hookspec
def onedoor_http_app(app: Any, ctx: ServeContext) -> None:
    """Configure the shared HTTP application before it serves.

    ``app`` is the :class:`starlette.applications.Starlette` app every asgi door is
    mounted on: add routes or middleware. ``ctx`` is the serve's
    :class:`onedoor.composition.ServeContext` (its kernel, options, hooks).
    Authentication stays in force: the transport wraps whatever is added here.
    """
