"""Fixtures for the Agent Framework adapter's tests: telemetry off before the framework is
imported, and the anyio backend. No network beyond 127.0.0.1, no API key."""

from __future__ import annotations

import os

os.environ["OTEL_SDK_DISABLED"] = "true"
os.environ.setdefault("ENABLE_OTEL", "false")

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
