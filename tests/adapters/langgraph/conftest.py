"""Fixtures for the LangGraph adapter's tests: a fresh bundled server per test, and
clients of it over in-process, JSON-RPC HTTP and REST."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from a2m import A2MClient
from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http

os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
os.environ.setdefault("LANGSMITH_TRACING", "false")

BINDINGS = ["in-process", "http", "rest"]


@pytest.fixture
def server() -> Iterator[A2MServer]:
    with A2MServer() as fresh:
        yield fresh


@pytest.fixture
def http_url(server: A2MServer) -> Iterator[str]:
    with serve_http(server) as url:
        yield url


def client_for(binding: str, server: A2MServer, url: str | None) -> A2MClient:
    """A client of ``server`` over ``binding`` (``url`` is its HTTP address)."""
    if binding == "in-process":
        return A2MClient.in_process(server)
    assert url is not None
    if binding == "http":
        return A2MClient(url)
    return A2MClient.rest(url, namespace="langgraph")


@pytest.fixture(params=BINDINGS)
def binding(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def client(binding: str, server: A2MServer, request: pytest.FixtureRequest) -> Iterator[A2MClient]:
    url = request.getfixturevalue("http_url") if binding != "in-process" else None
    with client_for(binding, server, url) as made:
        yield made
