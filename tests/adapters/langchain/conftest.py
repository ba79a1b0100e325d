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
from langchain_support import BINDINGS, async_client, sync_client

from a2m import A2MClient, AsyncA2MClient
from a2m_server.server import A2MServer
from a2m_testing.servers import Servers

os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
os.environ.setdefault("LANGSMITH_TRACING", "false")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("asyncio"):
        # Auto mode for this directory's run only. pytest-asyncio also warns at start-up
        # that its fixture loop scope is unset, an error under filterwarnings = error; the
        # default it warns about (each fixture's own scope) is what these tests want.
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
