"""Shared fixtures for the MCP server's tests: the real ``mcp`` client against
``a2m-mcp`` in this process, over stdio and over streamable HTTP (loopback, ephemeral
ports), each on a fresh store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp import Client
from mcp_kit import CONFIG

from a2m import AsyncA2MClient
from a2m_mcp import build_server
from a2m_server.server import A2MServer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def store() -> Iterator[A2MServer]:
    """A fresh in-memory A2M server."""
    with A2MServer() as server:
        yield server


@pytest.fixture
async def a2m(store: A2MServer) -> AsyncIterator[AsyncA2MClient]:
    """An async A2M client of :func:`store`, the one the MCP server writes through."""
    client = AsyncA2MClient.in_process(store)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def mcp(a2m: AsyncA2MClient) -> AsyncIterator[Client]:
    """The real MCP client, connected in process to the server over :func:`a2m`."""
    async with Client(build_server(a2m, CONFIG)) as client:
        yield client


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A fresh SQLite file for an embedded store."""
    return str(tmp_path / "memory.db")
