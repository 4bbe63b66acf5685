"""OpenTelemetry traces and metrics, a Prometheus endpoint and JSON logs for onedoor, from
its observer hooks (entry point ``onedoor.hooks: otel``).

``plugin`` is what the entry point names: the hooks (:class:`~.hooks.Telemetry`) when the
environment asks for telemetry (an ``OTEL_EXPORTER_OTLP_*ENDPOINT``, ``OTEL_TRACES_EXPORTER``,
``OTEL_METRICS_EXPORTER`` or ``ONEDOOR_LOG_FORMAT=json``; see :mod:`.settings`), otherwise an
object with no hooks at all, so an installed but unconfigured plugin costs nothing. This
module imports only the settings unless telemetry is configured: onedoor imports hook
modules on every command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .settings import Dormant, Settings

if TYPE_CHECKING:
    from .hooks import Telemetry


def _plugin(settings: Settings) -> Any:
    if not settings.active:
        return Dormant()
    from .hooks import Telemetry

    return Telemetry(settings)


SETTINGS = Settings.from_env()
plugin: Telemetry | Dormant = _plugin(SETTINGS)


def __getattr__(name: str) -> Any:
    if name == "Telemetry":
        from .hooks import Telemetry

        return Telemetry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["SETTINGS", "Dormant", "Settings", "Telemetry", "plugin"]
