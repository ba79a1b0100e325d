"""Fixtures for the AutoGen adapter's tests: a real A2M server over HTTP on loopback, async
clients of it, and offline model clients. No network beyond 127.0.0.1, no API key."""

from __future__ import annotations

import os

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from collections.abc import AsyncIterator

import pytest

from a2m import AsyncA2MClient


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(a2m_http_url: str) -> AsyncIterator[AsyncA2MClient]:
    """An async client of a fresh server with every capability, over real HTTP."""
    async with AsyncA2MClient(a2m_http_url) as opened:
        yield opened
