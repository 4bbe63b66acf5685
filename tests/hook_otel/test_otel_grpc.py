"""OTLP over gRPC (``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``, the ``grpc`` extra): a real gRPC
collector service on 127.0.0.1 receives the run's spans."""

from __future__ import annotations

import threading
from concurrent import futures

import httpx
import pytest
from onedoor_test_support import wait_for
from otel_support import Served, otel_env

pytest.importorskip("onedoor_door_rest", reason="the REST door is not installed")
grpc = pytest.importorskip("grpc", reason="grpcio (onedoor-hook-otel[grpc]) is not installed")
pytest.importorskip("opentelemetry.exporter.otlp.proto.grpc", reason="the gRPC exporter is not installed")

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc  # noqa: E402


class Collector(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.names: list[str] = []
        self.lock = threading.Lock()

    def Export(self, request, context):
        with self.lock:
            self.names += [s.name for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
        return trace_service_pb2.ExportTraceServiceResponse()


def test_spans_over_grpc():
    collector = Collector()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(collector, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        env = otel_env(f"http://127.0.0.1:{port}", OTEL_EXPORTER_OTLP_PROTOCOL="grpc", OTEL_EXPORTER_OTLP_INSECURE="true",
                       OTEL_METRICS_EXPORTER="none")
        with Served(["--door", "rest"], env) as served, httpx.Client(base_url=served.base_url) as client:
            assert client.post("/rest/chat", json={"message": "over grpc"}).status_code == 200
            wait_for(lambda: {"invoke_agent scripted", "execute_tool word_count"} <= set(collector.names),
                     "the run's spans at the gRPC collector", timeout=30)
            assert served.stop() == 0
    finally:
        server.stop(None)
