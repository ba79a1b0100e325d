"""Fixtures for the client tests: one matrix of {sync, async} x {in-process, stdio, HTTP}
against the real bundled server, and a driver that lets one test body run against either
client (every call is awaited when the client is async)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from client_support import (
    BINDINGS,
    MODES,
    PUSH_BINDINGS,
    RPC_URL,
    Driver,
    FakeServer,
    Spy,
    close_all,
    server_config,
    stdio_args,
)

from a2m import A2MClient, AsyncA2MClient


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def make_driver(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Build a driver for one (mode, binding) against a fresh bundled server; everything it
    starts is torn down after the test. Async clients are closed by ``close_all``."""
    from a2m_server.server import A2MServer
    from a2m_testing.servers import serve_http, stdio_command

    stack = contextlib.ExitStack()
    async_clients: list[AsyncA2MClient] = []
    counter = itertools.count()

    def build(
        mode: str,
        binding: str,
        *,
        capabilities: list[str] | None = None,
        read_only: bool = False,
        config: dict[str, Any] | None = None,
        **client_options: Any,
    ) -> Driver:
        cls: type[A2MClient] | type[AsyncA2MClient] = (
            A2MClient if mode == "sync" else AsyncA2MClient
        )
        client: A2MClient | AsyncA2MClient
        if binding == "stdio":
            assert not config, "server config changes are not passed to stdio servers"
            db = str(tmp_path / f"stdio-{next(counter)}.db")
            command = stdio_command(db, *stdio_args(capabilities, read_only))
            client = cls.stdio(command, **client_options)
        else:
            options = config or {}
            server = stack.enter_context(
                A2MServer(server_config(capabilities, read_only, **options))
            )
            if binding == "in-process":
                client = cls.in_process(server, **client_options)
            else:
                url = stack.enter_context(serve_http(server))
                client = cls(url, **client_options)
        if isinstance(client, AsyncA2MClient):
            async_clients.append(client)
        else:
            stack.callback(client.close)
        return Driver(client, binding)

    build.async_clients = async_clients  # type: ignore[attr-defined]
    with stack:
        yield build
        assert not async_clients, "async clients must be closed with close_all()"


@pytest.fixture(params=[(mode, binding) for mode in MODES for binding in BINDINGS], ids="-".join)
async def client(request: pytest.FixtureRequest, make_driver: Any) -> AsyncIterator[Driver]:
    """The matrix: every test using it runs on sync and async clients over in-process,
    stdio and HTTP, against a server declaring every capability."""
    mode, binding = request.param
    driver = make_driver(mode, binding)
    try:
        yield driver
    finally:
        await close_all(make_driver)


@pytest.fixture(
    params=[(mode, binding) for mode in MODES for binding in PUSH_BINDINGS], ids="-".join
)
async def push_client(request: pytest.FixtureRequest, make_driver: Any) -> AsyncIterator[Driver]:
    """The matrix cells whose binding carries push notifications."""
    mode, binding = request.param
    driver = make_driver(mode, binding)
    try:
        yield driver
    finally:
        await close_all(make_driver)


@pytest.fixture(params=[(mode, binding) for mode in MODES for binding in BINDINGS], ids="-".join)
async def core_client(request: pytest.FixtureRequest, make_driver: Any) -> AsyncIterator[Driver]:
    """The matrix against a server declaring ``core`` only."""
    mode, binding = request.param
    driver = make_driver(mode, binding, capabilities=["core"])
    try:
        yield driver
    finally:
        await close_all(make_driver)


@pytest.fixture(params=[(mode, binding) for mode in MODES for binding in BINDINGS], ids="-".join)
async def read_only_client(
    request: pytest.FixtureRequest, make_driver: Any
) -> AsyncIterator[Driver]:
    """The matrix against a read-only server (§2.1)."""
    mode, binding = request.param
    driver = make_driver(mode, binding, read_only=True)
    try:
        yield driver
    finally:
        await close_all(make_driver)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Callable[[Driver], Spy]:
    """``spy(driver)`` starts recording what the driver's client sends."""

    def attach(driver: Driver) -> Spy:
        recorder = Spy()
        transport = driver.client._state.transport
        name = "handle_async_request" if driver.is_async else "handle_request"
        original = getattr(transport, name)

        if driver.is_async:

            async def send(request: dict[str, Any], **kwargs: Any) -> Any:
                recorder.methods.append(request["method"])
                return await original(request, **kwargs)
        else:

            def send(request: dict[str, Any], **kwargs: Any) -> Any:  # type: ignore[misc]
                recorder.methods.append(request["method"])
                return original(request, **kwargs)

        monkeypatch.setattr(transport, name, send)
        return recorder

    return attach


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    """A respx-mocked HTTP A2M server at :data:`RPC_URL` (clients send through httpx while
    it is active, so respx sees them)."""
    import respx

    from a2m.transports import use_httpx

    fake = FakeServer()
    with use_httpx(), respx.mock(assert_all_called=False) as router:
        router.post(RPC_URL).mock(side_effect=fake)
        yield fake
