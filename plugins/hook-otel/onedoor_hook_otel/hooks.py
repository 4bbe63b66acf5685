"""The hook implementations: the only way the plugin learns what onedoor does.

Nothing of OpenTelemetry is imported until the first hook that needs it (a server's
``onedoor_serving``, or the first run of ``onedoor run``). Every observer hook is fenced
in by the kernel; the two configuration hooks (``onedoor_http_app``) guard themselves, so
telemetry that cannot start never stops a server.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any, AsyncIterator

from onedoor.hookspecs import hookimpl

from . import names as n
from .settings import Settings

log = logging.getLogger("onedoor.otel")


class Telemetry:
    """Spans, metrics and JSON logs for every run and request, from the hooks."""

    def __init__(self, settings: Settings, providers: Any = None) -> None:
        """``providers``: a :class:`~.providers.Providers` to use instead of building them
        from the settings (an application that embeds onedoor, a test)."""
        self.settings = settings
        self.spans: Any = None
        self.meters: Any = None
        self.providers: Any = providers
        self.runs: dict[str, Any] = {}  # run id -> RunSpans
        self._started = False
        self._lock = threading.Lock()

    # -- start-up --------------------------------------------------------------------------
    def start(self) -> None:
        """Set up logs, providers and instruments, once (the first hook that needs them)."""
        if self._started:
            return
        with self._lock:
            if self._started:
                return
            settings = self.settings
            if settings.json_logs:
                from .logs import install

                install(settings.log_level)
            for problem in settings.problems:
                log.warning("telemetry: %s", problem)
            from opentelemetry.trace import NoOpTracerProvider

            from .providers import Providers, build
            from .spans import Spans

            try:
                if self.providers is None:
                    self.providers = build(settings)
                if self.providers.meter_provider is not None:
                    from .meters import Meters

                    self.meters = Meters(self.providers.meter_provider)
            except Exception:  # telemetry that cannot start leaves onedoor as it is (logged)
                log.exception("telemetry: could not start; nothing is exported")
                self.providers, self.meters = Providers(), None
            self.spans = Spans(self.providers.tracer_provider or NoOpTracerProvider(), settings.capture_content)
            self._started = True

    @hookimpl
    def onedoor_serving(self, ctx: Any) -> None:
        self.start()
        if self.meters is not None:
            self.meters.watch(ctx.kernel)
        if self.settings.prometheus and ctx.transport_name != "http":
            log.warning("telemetry: the Prometheus endpoint is served on the HTTP transport only (this server: %s)",
                        ctx.transport_name)

    @hookimpl
    def onedoor_http_app(self, app: Any, ctx: Any) -> None:
        try:
            self.start()
            pull = self.providers.pull
            if pull is not None:
                from .prometheus import add_route

                add_route(app, pull, self.settings.metrics_path)
            self._wrap_lifespan(app)
        except Exception:
            log.exception("telemetry: could not set up the HTTP app's metrics endpoint")

    def _wrap_lifespan(self, app: Any) -> None:
        """At start: uvicorn's loggers get the JSON format; at the end: the exporters flush,
        off the event loop, for at most the shutdown timeout."""
        import asyncio

        original = app.router.lifespan_context
        settings, providers = self.settings, self.providers

        @contextlib.asynccontextmanager
        async def lifespan(application: Any) -> AsyncIterator[Any]:
            if settings.json_logs:
                from .logs import reformat_uvicorn

                reformat_uvicorn()
            try:
                async with original(application) as state:
                    yield state
            finally:
                await asyncio.to_thread(providers.shutdown, settings.shutdown_timeout)

        app.router.lifespan_context = lifespan

    # -- requests ----------------------------------------------------------------------------
    @hookimpl
    def onedoor_request_started(self, request: Any) -> None:
        if self.settings.tracing:
            self.start()
            self.spans.request_started(request)

    @hookimpl
    def onedoor_request_finished(self, request: Any, error: str | None) -> None:
        if self.spans is not None:
            self.spans.request_finished(request, error)

    # -- runs ------------------------------------------------------------------------------
    @hookimpl
    def onedoor_run_started(self, run: Any) -> None:
        self.start()
        self.runs[run.run_id] = self.spans.run_started(run)

    @hookimpl
    def onedoor_backend_starting(self, run: Any) -> None:
        if self.settings.json_logs:
            from .logs import RUN

            RUN.set((run.run_id, run.thread_id, run.door))
        held = self.runs.get(run.run_id)
        if held is not None and self.settings.tracing:
            self.spans.backend_starting(held)

    @hookimpl
    def onedoor_first_token(self, run: Any) -> None:
        held = self.runs.get(run.run_id)
        if held is None:
            return
        seconds = self.spans.first_chunk(held)
        if self.meters is not None:
            self.meters.first_chunk.record(seconds, _common(run))

    @hookimpl
    def onedoor_tool_started(self, run: Any, call: Any) -> None:
        held = self.runs.get(run.run_id)
        if held is not None:
            self.spans.tool_started(held, call)

    @hookimpl
    def onedoor_tool_finished(self, run: Any, result: Any) -> None:
        held = self.runs.get(run.run_id)
        if held is None:
            return
        seconds = self.spans.tool_finished(held, result.call_id, result)
        if seconds is not None and self.meters is not None:
            attributes = {n.OPERATION: n.EXECUTE_TOOL, n.TOOL_NAME: result.name, n.AGENT_NAME: run.backend}
            if result.is_error:
                attributes[n.ERROR_TYPE] = "tool_error"
            self.meters.tool_duration.record(seconds, attributes)

    @hookimpl
    def onedoor_question_asked(self, run: Any, question: Any) -> None:
        held = self.runs.get(run.run_id)
        if held is not None:
            self.spans.question_asked(held, question)

    @hookimpl
    def onedoor_question_answered(self, run: Any, question: Any, answer: Any) -> None:
        held = self.runs.get(run.run_id)
        if held is not None:
            self.spans.question_answered(held, question.id, answer)

    @hookimpl
    def onedoor_run_refused(self, door: str, reason: str, principal: str) -> None:
        self.start()
        if self.meters is not None:
            self.meters.refused.add(1, {n.DOOR: door, n.REFUSAL_REASON: reason})

    @hookimpl
    def onedoor_run_finished(self, run: Any, outcome: Any) -> None:
        import time

        from .spans import model_attributes

        held = self.runs.pop(run.run_id, None)
        if held is None:
            return
        models = model_attributes(tuple(getattr(outcome, "usage", ()) or ()))
        self.spans.run_finished(held, outcome, models)
        if self.meters is not None:
            self.meters.run_ended(run, outcome, time.perf_counter() - held.started, {**_common(run), **{
                key: value for key, value in models.items() if key in (n.PROVIDER, n.REQUEST_MODEL)}})
        if self.settings.json_logs:
            _log_run(run, outcome, time.perf_counter() - held.started)


def _log_run(run: Any, outcome: Any, seconds: float) -> None:
    """One line per run in the JSON logs: how it ended, how long it took, its tokens."""
    usage = tuple(getattr(outcome, "usage", ()) or ())
    stop_reason = getattr(outcome, "stop_reason", None)
    fields: dict[str, Any] = {"outcome": stop_reason or "failed", "duration_s": round(seconds, 6),
                              "backend": run.backend}
    if usage:
        fields["input_tokens"] = sum(u.input_tokens for u in usage)
        fields["output_tokens"] = sum(u.output_tokens for u in usage)
    extra = {"onedoor_run": (run.run_id, run.thread_id, run.door), "onedoor_fields": fields}
    if stop_reason is None:
        log.warning("run failed: %s", outcome.error, extra=extra)
    else:
        log.info("run ended: %s", stop_reason, extra=extra)


def _common(run: Any) -> dict[str, Any]:
    return {n.OPERATION: n.INVOKE_AGENT, n.AGENT_NAME: run.backend, n.DOOR: run.door}
