"""Shared fixtures for the Agno adapter's tests: telemetry off before Agno is imported,
real A2M servers over HTTP (loopback, ephemeral ports), fresh databases per test."""

from __future__ import annotations

import os

os.environ["AGNO_TELEMETRY"] = "false"
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from collections.abc import AsyncIterator, Iterator

import pytest

from a2m import A2MClient, AsyncA2MClient


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def client(a2m_http_url: str) -> Iterator[A2MClient]:
    """A sync client of a fresh server over real HTTP."""
    with A2MClient(a2m_http_url) as opened:
        yield opened


@pytest.fixture
async def async_client(a2m_http_url: str) -> AsyncIterator[AsyncA2MClient]:
    """An async client of the same server over real HTTP."""
    opened = AsyncA2MClient(a2m_http_url)
    try:
        yield opened
    finally:
        await opened.aclose()
