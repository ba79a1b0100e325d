"""Fixtures for the REST binding tests: one in-memory server per module behind a real
uvicorn on an ephemeral 127.0.0.1 port (tests use namespaces of their own), and a
``Rest`` client for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rest_support import Rest

from a2m_server import A2MServer
from a2m_testing.servers import serve_http


@pytest.fixture(autouse=True)
def _store(store_backend: str) -> str:
    """Every test here runs on each store backend (see tests/conftest.py)."""
    return store_backend


@pytest.fixture(scope="module")
def server(store_backend: str) -> Iterator[A2MServer]:
    with A2MServer() as server:
        yield server


@pytest.fixture(scope="module")
def url(server: A2MServer) -> Iterator[str]:
    with serve_http(server) as url:
        yield url


@pytest.fixture
def rest(url: str) -> Iterator[Rest]:
    client = Rest(url)
    try:
        yield client
    finally:
        client.close()
