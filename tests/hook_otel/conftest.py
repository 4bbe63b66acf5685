"""Fixtures for the OpenTelemetry plugin's tests (helpers in otel_support.py, the OTLP
receiver in otlp_receiver.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

pytest.importorskip("onedoor_hook_otel", reason="the OpenTelemetry plugin (plugins/hook-otel) is not installed")
pytest.importorskip("opentelemetry.proto", reason="the test receiver needs opentelemetry-proto")

from otlp_receiver import Receiver


@pytest.fixture
def receiver():
    found = Receiver().start()
    try:
        yield found
    finally:
        found.stop()
