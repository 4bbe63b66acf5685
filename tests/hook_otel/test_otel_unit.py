"""The plugin's parts on their own: its settings from the environment, Prometheus names,
and a run's parent in a kernel in this process (the SDK's in-memory exporter)."""

from __future__ import annotations

import pluggy
import pytest
from onedoor import hookspecs
from onedoor.testing import collect, final, scripted_kernel
from onedoor_hook_otel.prometheus import label_name, metric_name
from onedoor_hook_otel.settings import Settings


def test_nothing_configured_is_dormant():
    settings = Settings.from_env({})
    assert not settings.active and settings.traces == () and settings.metrics == ()


@pytest.mark.parametrize("env, traces, metrics", [
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, ("otlp",), ("otlp",)),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, ("otlp",), ()),
    ({"OTEL_METRICS_EXPORTER": "prometheus"}, (), ("prometheus",)),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "otlp, Prometheus"},
     (), ("otlp", "prometheus")),
    ({"OTEL_TRACES_EXPORTER": "console"}, ("console",), ()),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"}, (), ()),
])
def test_exporters_from_the_standard_variables(env, traces, metrics):
    settings = Settings.from_env(env)
    assert (settings.traces, settings.metrics) == (traces, metrics)
    assert settings.active == bool(traces or metrics)


def test_json_logs_alone_are_active_and_bad_values_are_named():
    settings = Settings.from_env({"ONEDOOR_LOG_FORMAT": "json", "ONEDOOR_LOG_LEVEL": "loud",
                                  "OTEL_TRACES_EXPORTER": "zipkin", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
                                  "ONEDOOR_METRICS_PATH": "metrics?x"})
    assert settings.active and settings.json_logs and not settings.tracing
    assert settings.log_level == "info" and settings.metrics_path == "/metrics"
    assert settings.traces_protocol == "http/protobuf"
    assert len(settings.problems) == 4 and any("zipkin" in p for p in settings.problems)


@pytest.mark.parametrize("value, captured", [("", False), ("false", False), ("true", True), ("TRUE", True),
                                             ("SPAN_ONLY", True), ("span_and_event", True), ("EVENT_ONLY", False),
                                             ("NO_CONTENT", False)])
def test_content_capture_opt_in(value, captured):
    env = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": value}
    assert Settings.from_env(env).capture_content is captured


def test_prometheus_names():
    assert metric_name("gen_ai.client.token.usage", "{token}") == "gen_ai_client_token_usage"
    assert metric_name("gen_ai.client.operation.duration", "s") == "gen_ai_client_operation_duration_seconds"
    assert metric_name("http.server.request.duration_seconds", "s") == "http_server_request_duration_seconds"
    assert metric_name("onedoor.runs", "{run}") == "onedoor_runs"
    assert label_name("gen_ai.token.type") == "gen_ai_token_type" and label_name("9lives") == "_9lives"


@pytest.fixture
def traced():
    """A kernel whose observer is the plugin, its spans kept in memory: (kernel, exporter, tracer)."""
    from onedoor_hook_otel import Telemetry
    from onedoor_hook_otel.providers import Providers
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    providers = Providers()
    providers.tracer_provider = provider
    pm = pluggy.PluginManager("onedoor")
    pm.add_hookspecs(hookspecs)
    pm.register(Telemetry(Settings(traces=("otlp",)), providers), name="otel")
    return scripted_kernel(hooks=pm.hook, tool=False, reasoning=False), exporter, provider.get_tracer("test")


def run_span(exporter):
    [span] = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent scripted"]
    return span


async def test_a_run_continues_the_trace_its_door_passed_on(traced):
    kernel, exporter, _ = traced
    meta = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    assert final(await collect(kernel, "hello", meta=meta)).stop_reason == "end_turn"
    span = run_span(exporter)
    assert format(span.context.trace_id, "032x") == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert span.parent is not None and span.parent.is_remote and format(span.parent.span_id, "016x") == "00f067aa0ba902b7"


async def test_a_run_inside_a_span_is_its_child_unless_its_meta_names_another_trace(traced):
    kernel, exporter, tracer = traced
    with tracer.start_as_current_span("a request") as outer:
        await collect(kernel, "inside")
        inside = run_span(exporter)
        exporter.clear()
        other = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
        await collect(kernel, "elsewhere", meta=other)
        elsewhere = run_span(exporter)
        exporter.clear()
        same = {"traceparent": f"00-{format(outer.get_span_context().trace_id, '032x')}-00f067aa0ba902b7-01"}
        await collect(kernel, "same trace", meta=same)
        same_trace = run_span(exporter)
    assert inside.parent.span_id == outer.get_span_context().span_id
    assert format(elsewhere.context.trace_id, "032x") == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert same_trace.parent.span_id == outer.get_span_context().span_id
