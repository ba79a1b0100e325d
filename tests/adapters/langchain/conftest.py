"""Fixtures for the LangChain adapter's tests: one fresh server per test, reached by a sync
and an async client over in-process, JSON-RPC HTTP and REST.

These tests run in the ``tests-langchain`` nox session (``uv run nox -s tests-langchain``),
whose environment holds langchain-tests and pytest-asyncio. The ``langchain_tests`` suites
need pytest-asyncio's auto mode; it is switched on here, for this directory only, rather
than in the root configuration every other suite shares."""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import AsyncIterator, Iterator

import pytest
from langchain_support import REST_NAMESPACE

from a2m import A2MClient, AsyncA2MClient
from a2m_server.server import A2MServer
from a2m_testing.servers import Servers

os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
os.environ.setdefault("LANGSMITH_TRACING", "false")

BINDINGS = ["in-process", "http", "rest"]


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("asyncio"):
        # Auto mode for this directory's run; the loop scope is the one pytest-asyncio
        # defaults to, and saying so here keeps its unset-option warning (an error under
        # filterwarnings = error) from failing the session before a test runs.
        config.option.asyncio_mode = "auto"
        warnings.filterwarnings(
            "ignore",
            message='The configuration option "asyncio_default_fixture_loop_scope" is unset',
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.pluginmanager.hasplugin("asyncio"):
        return
    # Without pytest-asyncio (the workspace environment) the sync tests still run here.
    skip = pytest.mark.skip(reason="async: run with `uv run nox -s tests-langchain`")
    here = os.path.dirname(__file__)
    for item in items:
        function = getattr(item, "function", None)
        if str(item.path).startswith(here) and inspect.iscoroutinefunction(function):
            item.add_marker(skip)


@pytest.fixture
def servers() -> Iterator[Servers]:
    with Servers() as made:
        yield made


@pytest.fixture
def server(servers: Servers) -> A2MServer:
    return servers.server()


def sync_client(binding: str, servers: Servers, server: A2MServer) -> A2MClient:
    """A sync client of ``server`` over ``binding``."""
    if binding == "in-process":
        return A2MClient.in_process(server)
    url = servers.http_url(server)
    if binding == "http":
        return A2MClient(url)
    return A2MClient.rest(url, namespace=REST_NAMESPACE)


def async_client(binding: str, servers: Servers, server: A2MServer) -> AsyncA2MClient:
    """An async client of ``server`` over ``binding``."""
    if binding == "in-process":
        return AsyncA2MClient.in_process(server)
    url = servers.http_url(server)
    if binding == "http":
        return AsyncA2MClient(url)
    return AsyncA2MClient.rest(url, namespace=REST_NAMESPACE)


@pytest.fixture(params=BINDINGS)
def binding(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def client(binding: str, servers: Servers, server: A2MServer) -> Iterator[A2MClient]:
    made = sync_client(binding, servers, server)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
async def aclient(
    binding: str, servers: Servers, server: A2MServer
) -> AsyncIterator[AsyncA2MClient]:
    made = async_client(binding, servers, server)
    try:
        yield made
    finally:
        await made.aclose()
