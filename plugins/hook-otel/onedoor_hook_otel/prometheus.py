"""``GET /metrics``: the plugin's metrics in the Prometheus text format, on the shared
HTTP app (``OTEL_METRICS_EXPORTER`` naming ``prometheus``).

The route is added by ``onedoor_http_app``, so the HTTP transport's guard wraps it like
every door: a server with a token asks for it here too (a scraper sends ``Authorization:
Bearer``). The metrics are collected when scraped, from the same instruments the OTLP
exporter reads, and named the Prometheus way: dots become underscores, a unit in seconds
adds ``_seconds``, a counter's sample ends in ``_total``, attribute names become labels
(``gen_ai.client.token.usage`` -> ``gen_ai_client_token_usage_bucket{gen_ai_token_type=...}``).
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterator

_INVALID = re.compile(r"[^a-zA-Z0-9_:]")
_UNITS = {"s": "seconds", "ms": "milliseconds", "By": "bytes"}


def metric_name(name: str, unit: str) -> str:
    base = _INVALID.sub("_", name)
    suffix = "" if not unit or unit.startswith("{") else _UNITS.get(unit, _INVALID.sub("_", unit))
    if suffix and suffix != "1" and not base.endswith("_" + suffix):
        base += "_" + suffix
    return base


def label_name(name: str) -> str:
    label = _INVALID.sub("_", name).replace(":", "_")
    return "_" + label if label[:1].isdigit() else label


def _labels(attributes: Any) -> dict[str, str]:
    out = {}
    for key, value in (attributes or {}).items():
        out[label_name(str(key))] = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return out


def _bound(value: float) -> str:
    return "+Inf" if math.isinf(value) else repr(float(value))


class OtelCollector:
    """A prometheus_client collector over a pull reader's metrics."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader

    def collect(self) -> Iterator[Any]:
        data = self.reader.snapshot()
        if data is None:
            return
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    family = self._family(metric)
                    if family is not None:
                        yield family

    def _family(self, metric: Any) -> Any:
        """One OpenTelemetry metric as a Prometheus metric family (None for a kind it does not show)."""
        from opentelemetry.sdk.metrics.export import Gauge, Histogram, Sum
        from prometheus_client.metrics_core import Metric

        name = metric_name(metric.name, metric.unit or "")
        help_text = metric.description or metric.name
        data = metric.data
        if isinstance(data, Histogram):
            family = Metric(name, help_text, "histogram")
            for bucketed in data.data_points:
                self._histogram(family, name, bucketed)
        elif isinstance(data, Sum) and data.is_monotonic:
            family = Metric(name.removesuffix("_total"), help_text, "counter")
            for point in data.data_points:
                family.add_sample(family.name + "_total", _labels(point.attributes), point.value)
        elif isinstance(data, (Sum, Gauge)):
            family = Metric(name, help_text, "gauge")
            for point in data.data_points:
                family.add_sample(name, _labels(point.attributes), point.value)
        else:
            return None
        return family

    @staticmethod
    def _histogram(family: Any, name: str, point: Any) -> None:
        labels = _labels(point.attributes)
        running = 0
        for bound, count in zip([*point.explicit_bounds, math.inf], point.bucket_counts):
            running += count
            family.add_sample(name + "_bucket", {**labels, "le": _bound(bound)}, running)
        family.add_sample(name + "_count", labels, point.count)
        family.add_sample(name + "_sum", labels, point.sum)


class MetricsEndpoint:
    """A plain ASGI app answering a scrape (GET or HEAD) with the collected metrics."""

    def __init__(self, reader: Any) -> None:
        from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry

        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(OtelCollector(reader))
        self.content_type = CONTENT_TYPE_LATEST.encode()

    def render(self) -> bytes:
        from prometheus_client import generate_latest

        return generate_latest(self.registry)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = self.render()
        headers = [(b"content-type", self.content_type), (b"content-length", str(len(body)).encode()),
                   (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else body})


def add_route(app: Any, reader: Any, path: str) -> None:
    """``GET path`` on the shared Starlette app, ahead of the doors' mounts."""
    app.add_route(path, MetricsEndpoint(reader), methods=["GET"], include_in_schema=False)
    app.router.routes.insert(0, app.router.routes.pop())
