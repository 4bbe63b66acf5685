"""OpenTelemetry traces and metrics, a Prometheus endpoint and JSON logs for onedoor, from
its observer hooks (entry point ``onedoor.hooks: otel``).

``plugin`` is what the entry point names: the hooks (:class:`~.hooks.Telemetry`) when the
environment asks for telemetry (an ``OTEL_EXPORTER_OTLP_*ENDPOINT``, ``OTEL_TRACES_EXPORTER``,
``OTEL_METRICS_EXPORTER`` or ``ONEDOOR_LOG_FORMAT=json``; see :mod:`.settings`), otherwise an
object with no hooks at all, so an installed but unconfigured plugin costs nothing. This
module imports only the settings: onedoor imports hook modules on every command.
"""

from __future__ import annotations

from .hooks import Dormant, Telemetry
from .settings import Settings

SETTINGS = Settings.from_env()
plugin: Telemetry | Dormant = Telemetry(SETTINGS) if SETTINGS.active else Dormant()

__all__ = ["SETTINGS", "Dormant", "Settings", "Telemetry", "plugin"]
