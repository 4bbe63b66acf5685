"""A local OTLP/HTTP receiver for the tests: the real protocol (protobuf over HTTP POST to
``/v1/traces`` and ``/v1/metrics``), decoded with opentelemetry-proto.

    receiver = Receiver().start()
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, ...}
    spans = receiver.wait_for_spans(lambda spans: any(s.name == "invoke_agent scripted" for s in spans))

Spans come out flattened (:class:`SpanRecord`: name, kind, ids as hex, parent, attributes
as plain Python values, status); metrics as ``{name: [(attributes, value)]}`` where value
is a sum, a gauge's value or a histogram's ``(count, sum)``, cumulative or not as sent.
"""

from __future__ import annotations

import gzip
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from onedoor_test_support import wait_for
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

KINDS = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
}
SPAN_KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def any_value(value: Any) -> Any:
    """An OTLP AnyValue as a plain Python value."""
    which = value.WhichOneof("value")
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, which) if which else None


def attributes(items: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in items}


@dataclass
class SpanRecord:
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    status_code: int  # 0 unset, 1 ok, 2 error
    status_message: str
    resource: dict[str, Any]
    scope: str
    start_ns: int
    end_ns: int


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        kinds = KINDS.get(self.path)
        if kinds is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        request = kinds[0]()
        request.ParseFromString(body)
        receiver: Receiver = self.server.receiver  # type: ignore[attr-defined]
        receiver.add(self.path, request, dict(self.headers))
        out = kinds[1]().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


class Receiver:
    """The receiver on 127.0.0.1 (a port the OS picks), on a daemon thread."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.receiver = self  # type: ignore[attr-defined]
        self._lock = threading.Lock()
        self.requests: list[tuple[str, Any, dict[str, str]]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> "Receiver":
        threading.Thread(target=self._server.serve_forever, daemon=True, name="otlp-receiver").start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add(self, path: str, request: Any, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append((path, request, headers))

    def _of(self, path: str) -> list[Any]:
        with self._lock:
            return [request for p, request, _ in self.requests if p == path]

    def spans(self) -> list[SpanRecord]:
        found = []
        for request in self._of("/v1/traces"):
            for resource_spans in request.resource_spans:
                resource = attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        found.append(SpanRecord(
                            span.name, SPAN_KINDS.get(span.kind, str(span.kind)), span.trace_id.hex(),
                            span.span_id.hex(), span.parent_span_id.hex(), attributes(span.attributes),
                            span.status.code, span.status.message, resource, scope_spans.scope.name,
                            span.start_time_unix_nano, span.end_time_unix_nano,
                        ))
        return found

    def metrics(self) -> dict[str, list[tuple[dict[str, Any], Any]]]:
        """The points of the latest export of each metric (cumulative: the totals so far)."""
        latest: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        for request in self._of("/v1/metrics"):
            for resource_metrics in request.resource_metrics:
                for scope_metrics in resource_metrics.scope_metrics:
                    for metric in scope_metrics.metrics:
                        latest[metric.name] = _points(metric)
        return latest

    def wait_for_spans(self, done: Callable[[list[SpanRecord]], Any], what: str, timeout: float = 20.0) -> list[SpanRecord]:
        wait_for(lambda: done(self.spans()), what, timeout)
        return self.spans()

    def wait_for_metrics(self, done: Callable[[dict[str, Any]], Any], what: str, timeout: float = 20.0) -> dict[str, Any]:
        wait_for(lambda: done(self.metrics()), what, timeout)
        return self.metrics()


def _points(metric: Any) -> list[tuple[dict[str, Any], Any]]:
    which = metric.WhichOneof("data")
    data = getattr(metric, which)
    out = []
    for point in data.data_points:
        labels = attributes(point.attributes)
        if which == "histogram":
            out.append((labels, (point.count, point.sum)))
        else:
            out.append((labels, point.as_double if point.WhichOneof("value") == "as_double" else point.as_int))
    return out
