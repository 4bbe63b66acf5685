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
The observers (every hook below but ``onedoor_cli`` and ``onedoor_http_app``) are fenced
in: an exception one of them raises is logged and never breaks a run or a request, nor
stops the other observers from being called. They are called on the event loop of the run
(or request): keep them quick, and hand slow work (exporting) to a thread.

A run's observers, in order: ``onedoor_run_started``; ``onedoor_backend_starting`` (in the
context the backend will run in); then as they happen ``onedoor_first_token``,
``onedoor_tool_started`` / ``onedoor_tool_finished``, ``onedoor_question_asked`` /
``onedoor_question_answered``, ``onedoor_usage``; last ``onedoor_run_finished``. A run the
kernel would not start is ``onedoor_run_refused`` (no other hook sees it). Doors wrap each
request or message they serve in ``onedoor_request_started`` / ``onedoor_request_finished``
(:mod:`onedoor.observe`); a run started while serving a request is inside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .composition import ServeContext
    from .events import RunFailed, RunFinished, ToolFinished, ToolStarted
    from .observe import RequestInfo
    from .questions import Answer, Question
    from .run.model import RunInfo
    from .usage import ModelUsage

hookspec = pluggy.HookspecMarker("onedoor")
hookimpl = pluggy.HookimplMarker("onedoor")


@hookspec
def onedoor_run_started(run: RunInfo) -> None:
    """A run began, before its first event reaches the door.

    ``run`` is a :class:`onedoor.RunInfo`: ``run_id``, ``backend``, ``door``, ``message``,
    ``history_length``, ``started_at`` (a ``time.time()``), ``thread_id`` (or None),
    ``principal``, and ``meta``: what the door passed on from its request (W3C
    ``traceparent`` / ``tracestate`` when the client sent them). Called on the event loop
    that drives the run: keep it quick, and hand slow work to a thread or task.
    """


@hookspec
def onedoor_backend_starting(run: RunInfo) -> None:
    """The run's backend is about to start, called in the context it will run in: a copy
    of the door's, made for this run. What an observer sets in a ``contextvars`` variable
    here (a tracing span made current, say) is current in the backend, on its worker thread
    (a sync backend) or its task (an async one), and nowhere else; there is nothing to reset.
    Not called for a run cancelled before its backend started.
    """


@hookspec
def onedoor_first_token(run: RunInfo) -> None:
    """The run's first text (or reasoning) reached the kernel: time to first token."""


@hookspec
def onedoor_tool_started(run: RunInfo, call: ToolStarted) -> None:
    """The backend called a tool (``call.call_id``, ``call.name``, ``call.arguments``)."""


@hookspec
def onedoor_tool_finished(run: RunInfo, result: ToolFinished) -> None:
    """A tool call ended (``result.is_error`` says whether it failed); called for the
    calls the kernel closes itself (a run cancelled or failed mid-call) too."""


@hookspec
def onedoor_question_asked(run: RunInfo, question: Question) -> None:
    """The backend asked a person (an approval or a form; :mod:`onedoor.questions`)."""


@hookspec
def onedoor_question_answered(run: RunInfo, question: Question, answer: Answer) -> None:
    """A question got its answer (``answer.how``: a person, a policy, expiry, cancel)."""


@hookspec
def onedoor_usage(run: RunInfo, usage: tuple[ModelUsage, ...]) -> None:
    """The backend reported usage as it went (``UsageReported``); the run's total is on
    ``onedoor_run_finished``'s outcome (``outcome.usage``)."""


@hookspec
def onedoor_run_refused(door: str, reason: str, principal: str) -> None:
    """A door asked for a run the kernel would not start (``reason``: RunRefused's:
    ``busy``, ``too_large``, ``invalid``, ``unsupported_content``…)."""


@hookspec
def onedoor_request_started(request: RequestInfo) -> None:
    """A door began serving a request or a message (an HTTP request, a JSON-RPC message
    over stdio or SLIM): ``request.door``, ``transport``, ``method``, ``meta`` (trace
    context and the like), ``principal``. ``request.scratch`` is the observers' own: what
    they keep for :func:`onedoor_request_finished`. Called in the task that serves the
    request, as is its finish, so a ``contextvars`` value set here (and reset there) is
    current for the runs the request starts.
    """


@hookspec
def onedoor_request_finished(request: RequestInfo, error: str | None) -> None:
    """The request has been answered (``error``: why it failed, for a failed one)."""


@hookspec
def onedoor_serving(ctx: ServeContext) -> None:
    """A server is about to serve (its kernel, doors and options are in ``ctx``): for an
    observer that reads the kernel's gauges (``ctx.kernel.active_runs``, ``parked_runs``)."""


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
