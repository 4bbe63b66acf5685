"""What the plugin does, read from the environment once (no OpenTelemetry import here).

The standard OpenTelemetry variables choose the exporters; onedoor's own add the JSON logs
and the path of the Prometheus endpoint. Unlike the OpenTelemetry SDK, which exports OTLP
to ``localhost:4318`` when nothing is set, the plugin exports nothing unless it is told
where to: installed in an environment that configures no telemetry, it registers no hook
and imports nothing.
"""

from __future__ import annotations

import os
from typing import Mapping, NamedTuple

TRUE = frozenset({"1", "true", "yes", "on"})
# OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: the modes that put content on spans
# (opentelemetry-util-genai's names), and a bare "true" taken as SPAN_ONLY.
CONTENT_ON_SPANS = frozenset({"span_only", "span_and_event", *TRUE})
PROTOCOLS = frozenset({"http/protobuf", "grpc"})
TRACE_EXPORTERS = frozenset({"otlp", "console", "none"})
METRIC_EXPORTERS = frozenset({"otlp", "prometheus", "console", "none"})
LOG_LEVELS = frozenset({"debug", "info", "warning", "error", "critical"})


def _list(value: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(part.strip().lower() for part in value.split(",") if part.strip()))


class Settings(NamedTuple):
    """The plugin's configuration. ``problems``: variables it could not use (each named
    once in a warning when the plugin starts; the rest still applies). A named tuple, not
    a dataclass: this module is imported by every ``onedoor`` command, and making a
    dataclass costs more than the rest of the plugin's start-up."""

    traces: tuple[str, ...] = ()  # exporters: "otlp", "console"
    metrics: tuple[str, ...] = ()  # "otlp", "prometheus", "console"
    traces_protocol: str = "http/protobuf"
    metrics_protocol: str = "http/protobuf"
    capture_content: bool = False
    metrics_path: str = "/metrics"
    json_logs: bool = False
    log_level: str = "info"
    shutdown_timeout: float = 5.0  # seconds the exporters get to send what is left at exit
    problems: tuple[str, ...] = ()

    @property
    def tracing(self) -> bool:
        return bool(self.traces)

    @property
    def metering(self) -> bool:
        return bool(self.metrics)

    @property
    def prometheus(self) -> bool:
        return "prometheus" in self.metrics

    @property
    def active(self) -> bool:
        """Whether the plugin has anything to do (else it registers no hook at all)."""
        return self.tracing or self.metering or self.json_logs

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        problems: list[str] = []
        disabled = env.get("OTEL_SDK_DISABLED", "").strip().lower() in TRUE
        endpoint = bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())
        traces = _exporters(env, "OTEL_TRACES_EXPORTER", TRACE_EXPORTERS, endpoint
                            or bool(env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()), problems)
        metrics = _exporters(env, "OTEL_METRICS_EXPORTER", METRIC_EXPORTERS, endpoint
                             or bool(env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "").strip()), problems)
        if disabled:
            traces = metrics = ()
        path = env.get("ONEDOOR_METRICS_PATH", "/metrics").strip() or "/metrics"
        if not path.startswith("/") or any(c in path for c in "?# "):
            problems.append(f"ONEDOOR_METRICS_PATH={path!r} is not a path; serving /metrics")
            path = "/metrics"
        log_format = env.get("ONEDOOR_LOG_FORMAT", "").strip().lower()
        if log_format not in ("", "text", "json"):
            problems.append(f"ONEDOOR_LOG_FORMAT={log_format!r}: use json (or text, the default)")
        level = env.get("ONEDOOR_LOG_LEVEL", "info").strip().lower() or "info"
        if level not in LOG_LEVELS:
            problems.append(f"ONEDOOR_LOG_LEVEL={level!r}: use one of {', '.join(sorted(LOG_LEVELS))}")
            level = "info"
        return cls(
            traces=traces,
            metrics=metrics,
            traces_protocol=_protocol(env, "TRACES", problems),
            metrics_protocol=_protocol(env, "METRICS", problems),
            capture_content=env.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").strip().lower()
            in CONTENT_ON_SPANS,
            metrics_path=path,
            json_logs=log_format == "json",
            log_level=level,
            shutdown_timeout=_seconds(env, "ONEDOOR_OTEL_SHUTDOWN_TIMEOUT", 5.0, problems),
            problems=tuple(dict.fromkeys(problems)),
        )


class Dormant:
    """The plugin when nothing is configured: no hooks, so nothing is observed or imported."""

    settings: Settings | None = None


def _exporters(env: Mapping[str, str], name: str, known: frozenset[str], endpoint_set: bool,
               problems: list[str]) -> tuple[str, ...]:
    """The exporters a variable names; unset: OTLP when an OTLP endpoint is set, else none."""
    raw = env.get(name)
    if raw is None or not raw.strip():
        return ("otlp",) if endpoint_set else ()
    chosen = _list(raw)
    unknown = [item for item in chosen if item not in known]
    if unknown:
        problems.append(f"{name}: unknown exporter {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return tuple(item for item in chosen if item in known and item != "none")


def _protocol(env: Mapping[str, str], signal: str, problems: list[str]) -> str:
    raw = (env.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "").strip()
    if not raw:
        return "http/protobuf"
    if raw.lower() not in PROTOCOLS:
        problems.append(f"OTLP protocol {raw!r} is not supported (use http/protobuf or grpc); using http/protobuf")
        return "http/protobuf"
    return raw.lower()


def _seconds(env: Mapping[str, str], name: str, default: float, problems: list[str]) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 0:
        problems.append(f"{name}={raw!r} is not a number of seconds; using {default:g}")
        return default
    return value
