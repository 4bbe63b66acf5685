"""The OpenTelemetry SDK pieces: a tracer provider and a meter provider with the exporters
the settings name, and their bounded shutdown.

Spans leave through a ``BatchSpanProcessor`` and metrics through a
``PeriodicExportingMetricReader``: both export on their own daemon threads, so a collector
that is down or slow costs a run nothing (``span.end()`` only queues; a full queue drops
the oldest span). The exporters read their own variables (``OTEL_EXPORTER_OTLP_*``:
endpoint, headers, timeout, compression, certificates; ``OTEL_BSP_*``;
``OTEL_METRIC_EXPORT_INTERVAL``), the tracer provider its sampler
(``OTEL_TRACES_SAMPLER``) and the resource ``OTEL_SERVICE_NAME`` /
``OTEL_RESOURCE_ATTRIBUTES`` (the service is ``onedoor`` unless they name it).

A tracer provider set up before onedoor's (``opentelemetry-instrument onedoor serve``, an
embedding application) is used as it is: its owner exports. The plugin's providers become
the global ones when there are none, so a library's own spans and metrics (pydantic-ai's,
when its agent is instrumented) go out with onedoor's.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading
from typing import Any

from .settings import Settings

log = logging.getLogger("onedoor.otel")


def pull_reader() -> Any:
    """A metric reader that collects when asked (no thread, no schedule)."""
    from opentelemetry.sdk.metrics.export import MetricReader

    class PullReader(MetricReader):
        def __init__(self) -> None:
            super().__init__()
            self._latest: Any = None

        def _receive_metrics(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> None:
            self._latest = metrics_data

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
            self._latest = None

        def snapshot(self) -> Any:
            """The metrics as of now (None once shut down)."""
            self.collect()
            return self._latest

    return PullReader()


def resource() -> Any:
    from onedoor import __version__
    from opentelemetry.sdk.resources import Resource

    found = Resource.create()
    extra: dict[str, str] = {}
    if str(found.attributes.get("service.name", "")).startswith("unknown_service"):
        extra["service.name"] = "onedoor"
    if "service.version" not in found.attributes and extra:
        extra["service.version"] = __version__
    return found.merge(Resource(extra)) if extra else found


def span_exporter(kind: str, protocol: str) -> Any:
    if kind == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)  # stdout may be a protocol (stdio doors)
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

        return GrpcSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def metric_exporter(kind: str, protocol: str) -> Any:
    if kind == "console":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return ConsoleMetricExporter(out=sys.stderr)
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetricExporter

        return GrpcMetricExporter()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter()


class Providers:
    """What :func:`build` made: ``tracer_provider`` (None without tracing),
    ``meter_provider`` (None without metrics), ``pull`` (the Prometheus reader, or None)."""

    def __init__(self) -> None:
        self.tracer_provider: Any = None
        self.meter_provider: Any = None
        self.pull: Any = None
        self.owned: list[Any] = []  # the providers this plugin made, shut down at the end
        self._shut = threading.Event()
        self._lock = threading.Lock()

    def shutdown(self, timeout: float) -> bool:
        """Flush and stop the providers on a thread of their own, waiting at most ``timeout``
        seconds (an exporter whose collector is down may take its whole export timeout);
        True when they finished in time. Once only."""
        with self._lock:
            if self._shut.is_set():
                return True
            self._shut.set()
        owned = list(self.owned)

        def stop() -> None:
            for provider in owned:
                try:
                    provider.shutdown()
                except Exception:
                    log.warning("telemetry: %s did not shut down cleanly", type(provider).__name__, exc_info=True)

        worker = threading.Thread(target=stop, name="onedoor-otel-shutdown", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            log.warning("telemetry: the exporters did not finish within %.1f s; what they held is dropped", timeout)
            return False
        return True


def build(settings: Settings) -> Providers:
    """Providers for ``settings``; an exporter that cannot be made is logged and left out."""
    made = Providers()
    res = resource()
    if settings.tracing:
        made.tracer_provider = _tracer_provider(settings, res, made)
    if settings.metering:
        made.meter_provider = _meter_provider(settings, res, made)
    if made.owned:
        atexit.register(made.shutdown, settings.shutdown_timeout)
    return made


def _tracer_provider(settings: Settings, res: Any, made: Providers) -> Any:
    from opentelemetry import trace

    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):
        log.info("telemetry: using the tracer provider already set up (%s)", type(current).__name__)
        return current
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=res, shutdown_on_exit=False)
    for kind in settings.traces:
        try:
            provider.add_span_processor(BatchSpanProcessor(span_exporter(kind, settings.traces_protocol)))
        except ImportError as exc:
            log.warning("telemetry: no %s span exporter (%s); pip install 'onedoor-hook-otel[grpc]'", kind, exc)
    trace.set_tracer_provider(provider)
    from .propagation import install

    install()
    made.owned.append(provider)
    return provider


def _meter_provider(settings: Settings, res: Any, made: Providers) -> Any:
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    readers: list[Any] = []
    for kind in settings.metrics:
        if kind == "prometheus":
            made.pull = pull_reader()
            readers.append(made.pull)
            continue
        try:
            readers.append(PeriodicExportingMetricReader(metric_exporter(kind, settings.metrics_protocol)))
        except ImportError as exc:
            log.warning("telemetry: no %s metric exporter (%s); pip install 'onedoor-hook-otel[grpc]'", kind, exc)
    provider = MeterProvider(metric_readers=readers, resource=res, shutdown_on_exit=False)
    if type(metrics.get_meter_provider()).__name__.startswith("_Proxy"):  # nobody set one: ours is global
        metrics.set_meter_provider(provider)
    made.owned.append(provider)
    return provider
