"""The metrics: GenAI's token usage, operation duration and time to first chunk, and
onedoor's runs (by outcome), refusals, and the active and parked runs of the kernels
being served (observable gauges, read when metrics are collected)."""

from __future__ import annotations

import weakref
from typing import Any, Iterable

from . import names as n


class Meters:
    """The instruments, made once on the plugin's meter provider."""

    def __init__(self, meter_provider: Any) -> None:
        from onedoor import __version__

        meter = meter_provider.get_meter("onedoor", __version__)
        self.tokens = meter.create_histogram(
            n.TOKEN_USAGE, unit="{token}", description="Tokens a run used, by token type (input, output)",
            explicit_bucket_boundaries_advisory=list(n.TOKEN_BUCKETS))
        self.duration = meter.create_histogram(
            n.OPERATION_DURATION, unit="s", description="How long a run took, from its start to its end",
            explicit_bucket_boundaries_advisory=list(n.SECOND_BUCKETS))
        self.first_chunk = meter.create_histogram(
            n.TIME_TO_FIRST_CHUNK_METRIC, unit="s", description="From a run's start to its first text (time to first token)",
            explicit_bucket_boundaries_advisory=list(n.SECOND_BUCKETS))
        self.tool_duration = meter.create_histogram(
            n.TOOL_DURATION, unit="s", description="How long a tool call took",
            explicit_bucket_boundaries_advisory=list(n.SECOND_BUCKETS))
        self.runs = meter.create_counter(n.RUNS, unit="{run}", description="Runs ended, by outcome")
        self.refused = meter.create_counter(n.RUNS_REFUSED, unit="{run}", description="Runs the kernel would not start, by reason")
        self.kernels: weakref.WeakSet[Any] = weakref.WeakSet()
        meter.create_observable_gauge(n.RUNS_ACTIVE, [self._active], unit="{run}",
                                      description="Runs holding a slot (started, not yet ended)")
        meter.create_observable_gauge(n.RUNS_PARKED, [self._parked], unit="{run}",
                                      description="Runs parked, waiting for answers between two requests")

    def watch(self, kernel: Any) -> None:
        """Report this kernel's active and parked runs (``onedoor_serving``)."""
        self.kernels.add(kernel)

    def _observe(self, attribute: str) -> Iterable[Any]:
        from opentelemetry.metrics import Observation

        total = 0
        kernels = list(self.kernels)
        for kernel in kernels:
            try:
                total += int(getattr(kernel, attribute))
            except Exception:  # noqa: BLE001 - a kernel shutting down reports nothing
                continue
        return [Observation(total)] if kernels else []

    def _active(self, options: Any) -> Iterable[Any]:
        return self._observe("active_runs")

    def _parked(self, options: Any) -> Iterable[Any]:
        return self._observe("parked_runs")

    def run_ended(self, run: Any, outcome: Any, seconds: float, common: dict[str, Any]) -> None:
        """Record a run's end: its outcome, duration and tokens per model."""
        failed = not hasattr(outcome, "stop_reason")
        label = "failed" if failed else str(outcome.stop_reason)
        self.runs.add(1, {n.DOOR: run.door, n.AGENT_NAME: run.backend, n.OUTCOME: label})
        attributes = dict(common)
        if failed:
            attributes[n.ERROR_TYPE] = "run_failed"
        self.duration.record(seconds, attributes)
        for usage in getattr(outcome, "usage", ()) or ():
            per_model = {**common, n.PROVIDER: usage.provider or "unknown", n.REQUEST_MODEL: usage.model or "unknown"}
            self.tokens.record(usage.input_tokens, {**per_model, n.TOKEN_TYPE: "input"})
            self.tokens.record(usage.output_tokens, {**per_model, n.TOKEN_TYPE: "output"})
