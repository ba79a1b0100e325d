"""Fixtures for the OpenAI Agents SDK adapter's tests: tracing off before the SDK runs, a
scripted model (no API key, no network), and items of every kind the SDK produces."""

from __future__ import annotations

import os

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

import pytest
from agents import set_tracing_disabled

set_tracing_disabled(True)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
