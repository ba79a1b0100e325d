"""The A2M pytest plugin, loaded through the ``pytest11`` entry point of ``a2m-testing``:
fixtures for real servers on every binding, clients parametrized across the bindings, and
a respx router that answers HTTP from an in-process server.

Every fixture is function-scoped and gives each test a fresh, empty store; everything a
fixture starts (servers, threads, subprocesses, temporary files) is gone after the test.

Which bindings a client test runs on: every entry of :data:`a2m_testing.bindings.BINDINGS`,
narrowed by ``--a2m-bindings=in-process,http`` (or the ``a2m_bindings`` ini option) and,
per test, class or module, by ``@pytest.mark.a2m_bindings("in-process", "http")``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from a2m import A2MClient, AsyncA2MClient

from .bindings import BINDINGS, open_client
from .mock_http import DEFAULT_URL, route_to_server
from .servers import Servers

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    import respx

    from a2m_server.config import ServerConfig
    from a2m_server.server import A2MServer

_MARKER = "a2m_bindings"
_OPTION = "--a2m-bindings"
_INI = "a2m_bindings"
_BINDING_FIXTURE = "a2m_binding"


# --- configuration ------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--a2m-bindings`` and the ``a2m_bindings`` ini option."""
    group = parser.getgroup("a2m", "A2M test servers and clients")
    group.addoption(
        _OPTION,
        metavar="NAMES",
        default=None,
        help=f"comma-separated bindings that a2m_client tests run on (default: all: "
        f"{','.join(BINDINGS)})",
    )
    parser.addini(
        _INI,
        type="args",
        default=[],
        help="bindings that a2m_client tests run on, unless --a2m-bindings says otherwise",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker (so ``--strict-markers`` accepts it) and check the option."""
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(*names): run this test's A2M clients only over these bindings, e.g. "
        f'@pytest.mark.{_MARKER}("in-process", "http")',
    )
    _selected_bindings(config)


def _selected_bindings(config: pytest.Config) -> list[str]:
    option = config.getoption(_OPTION)
    if option is not None:
        names, source = [name.strip() for name in option.split(",") if name.strip()], _OPTION
    else:
        names, source = [str(name) for name in config.getini(_INI)], f"ini {_INI}"
        names = [part.strip() for name in names for part in name.split(",") if part.strip()]
    if not names:
        return list(BINDINGS)
    unknown = [name for name in names if name not in BINDINGS]
    if unknown:
        raise pytest.UsageError(
            f"{source}: unknown A2M binding(s) {', '.join(unknown)}; known: {', '.join(BINDINGS)}"
        )
    return [name for name in BINDINGS if name in names]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run every test that uses ``a2m_binding`` (so every test of ``a2m_client``,
    ``a2m_async_client`` or their factories' binding) once per selected binding."""
    if _BINDING_FIXTURE not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(argnames, str):
            argnames = [name.strip() for name in argnames.split(",")]
        if _BINDING_FIXTURE in argnames:
            return  # the test chose its bindings itself
    names = _selected_bindings(metafunc.config)
    marker = metafunc.definition.get_closest_marker(_MARKER)
    if marker is not None:
        wanted = [str(name) for name in marker.args]
        # An unknown name stays in, so that run fails at setup saying which names exist.
        names = [name for name in names if name in wanted]
        names += [name for name in wanted if name not in BINDINGS]
    metafunc.parametrize(_BINDING_FIXTURE, names, indirect=True, ids=names)


# --- servers --------------------------------------------------------------------------


@pytest.fixture
def a2m_servers() -> Iterator[Servers]:
    """A :class:`~a2m_testing.servers.Servers` for this test: it makes fresh servers of
    every kind (in-process, HTTP, stdio) and shuts all of them down after the test. The
    other fixtures are built on it; use it directly for anything they do not cover."""
    with Servers() as servers:
        yield servers


@pytest.fixture
def a2m_server(a2m_servers: Servers) -> A2MServer:
    """A fresh in-process :class:`~a2m_server.server.A2MServer` on an in-memory store with
    every capability, closed after the test. ``a2m_http_url`` and ``a2m_respx_router``
    serve this same server, so a test can seed or inspect the store they expose."""
    return a2m_servers.server()


class ServerFactory(Protocol):
    """The callable ``a2m_server_factory`` provides."""

    def __call__(
        self,
        config: ServerConfig | None = None,
        *,
        db: str | Path = ":memory:",
        capabilities: Iterable[str] | None = None,
        read_only: bool | None = None,
    ) -> A2MServer: ...


@pytest.fixture
def a2m_server_factory(a2m_servers: Servers) -> ServerFactory:
    """Build in-process servers: ``a2m_server_factory(config=None, *, db=":memory:",
    capabilities=None, read_only=None)``, e.g. ``a2m_server_factory(capabilities=["core"])``
    or ``a2m_server_factory(db=tmp_path / "memory.db")``. All are closed after the test."""
    return a2m_servers.server


@pytest.fixture
def a2m_http_url(a2m_servers: Servers, a2m_server: A2MServer) -> str:
    """The base URL (``http://127.0.0.1:PORT/``) of ``a2m_server`` served over real HTTP by
    uvicorn on an ephemeral loopback port; stopped, and its thread joined, after the test."""
    return a2m_servers.http_url(a2m_server)


class HTTPServerFactory(Protocol):
    """The callable ``a2m_http_server_factory`` provides."""

    def __call__(
        self,
        server: A2MServer | None = None,
        *,
        config: ServerConfig | None = None,
        capabilities: Iterable[str] | None = None,
        read_only: bool | None = None,
        **app_options: Any,
    ) -> str: ...


@pytest.fixture
def a2m_http_server_factory(a2m_servers: Servers) -> HTTPServerFactory:
    """Serve servers over real HTTP with other options: returns the base URL of ``server``,
    or of a new one built from ``config`` / ``capabilities`` / ``read_only``; app options
    such as ``tokens={"secret": "alice"}`` or ``allowed_origins=["https://app.example"]``
    go to :func:`~a2m_server.bindings.http.create_app`. All stop after the test."""
    return a2m_servers.http_url


@pytest.fixture
def a2m_stdio_command(a2m_servers: Servers) -> list[str]:
    """The argv of a stdio server on a fresh database file in a temporary directory that is
    removed after the test, for ``A2MClient.stdio(a2m_stdio_command)`` or ``subprocess``.
    The test owns any process it starts with it (a client reaps its own on close)."""
    return a2m_servers.stdio_command()


# --- clients --------------------------------------------------------------------------


@pytest.fixture
def a2m_binding(request: pytest.FixtureRequest) -> str:
    """The binding this run of the test uses (``"in-process"``, ``"stdio"``, ``"http"``…).
    Requesting it, directly or through ``a2m_client``, parametrizes the test over the
    selected bindings; the id shows it, as in ``test_recall[http]``."""
    binding = getattr(request, "param", None)
    if not isinstance(binding, str):
        pytest.fail(
            "a2m_binding is parametrized at collection; it cannot be requested dynamically",
            pytrace=False,
        )
    if binding not in BINDINGS:
        pytest.fail(
            f"unknown A2M binding {binding!r} in @pytest.mark.{_MARKER}; "
            f"known: {', '.join(BINDINGS)}",
            pytrace=False,
        )
    return binding


class ClientFactory(Protocol):
    """The callable ``a2m_client_factory`` provides."""

    def __call__(
        self,
        binding: str,
        *,
        config: ServerConfig | None = None,
        capabilities: Iterable[str] | None = None,
        read_only: bool | None = None,
        **client_options: Any,
    ) -> A2MClient: ...


class AsyncClientFactory(Protocol):
    """The callable ``a2m_async_client_factory`` provides."""

    def __call__(
        self,
        binding: str,
        *,
        config: ServerConfig | None = None,
        capabilities: Iterable[str] | None = None,
        read_only: bool | None = None,
        **client_options: Any,
    ) -> AsyncA2MClient: ...


@pytest.fixture
def a2m_client_factory(a2m_servers: Servers) -> Iterator[ClientFactory]:
    """Open sync clients (:class:`~a2m.A2MClient`), each on a fresh server:
    ``a2m_client_factory(binding, *, config=None, capabilities=None, read_only=None,
    **client_options)``, e.g. ``a2m_client_factory(a2m_binding, capabilities=["core"])``
    for the current binding of a parametrized test. Every client is closed after the
    test, before its server."""
    clients = ExitStack()

    def build(
        binding: str,
        *,
        config: ServerConfig | None = None,
        capabilities: Iterable[str] | None = None,
        read_only: bool | None = None,
        **client_options: Any,
    ) -> A2MClient:
        client = open_client(
            A2MClient,
            binding,
            a2m_servers,
            config=config,
            capabilities=capabilities,
            read_only=read_only,
            **client_options,
        )
        clients.callback(client.close)
        return client

    with clients:  # closes every client, even when closing one of them fails
        yield build


@pytest.fixture
async def a2m_async_client_factory(
    anyio_backend: Any, a2m_servers: Servers
) -> AsyncIterator[AsyncClientFactory]:
    """The async twin of ``a2m_client_factory``: opens async clients
    (:class:`~a2m.AsyncA2MClient`) and closes them after the test. Async fixtures run on
    anyio's pytest plugin, on each ``anyio_backend``: on trio every binding but stdio,
    whose pipes are asyncio's, is served (a stdio client there skips the test)."""
    backend = anyio_backend if isinstance(anyio_backend, str) else anyio_backend[0]
    clients = AsyncExitStack()

    def build(
        binding: str,
        *,
        config: ServerConfig | None = None,
        capabilities: Iterable[str] | None = None,
        read_only: bool | None = None,
        **client_options: Any,
    ) -> AsyncA2MClient:
        if binding == "stdio" and backend != "asyncio":
            pytest.skip(f"AsyncA2MClient.stdio runs on asyncio only, not on {backend}")
        client = open_client(
            AsyncA2MClient,
            binding,
            a2m_servers,
            config=config,
            capabilities=capabilities,
            read_only=read_only,
            **client_options,
        )
        clients.push_async_callback(client.aclose)
        return client

    async with clients:
        yield build


@pytest.fixture
def a2m_client(a2m_binding: str, a2m_client_factory: ClientFactory) -> A2MClient:
    """An :class:`~a2m.A2MClient` on a fresh server with every capability, over each
    selected binding in turn (``test_x[in-process]``, ``test_x[stdio]``, ``test_x[http]``);
    closed after the test. Narrow the bindings with ``@pytest.mark.a2m_bindings(...)`` or
    ``--a2m-bindings``."""
    return a2m_client_factory(a2m_binding)


@pytest.fixture
def a2m_async_client(
    a2m_binding: str, a2m_async_client_factory: AsyncClientFactory
) -> AsyncA2MClient:
    """The async twin of ``a2m_client``: an :class:`~a2m.AsyncA2MClient` over each
    selected binding, closed after the test. The test itself may be a plain ``async
    def``: anyio's plugin runs it, as it runs the fixture, on each ``anyio_backend``
    (asyncio, and trio when it is installed, save over stdio)."""
    return a2m_async_client_factory(a2m_binding)


# --- HTTP without sockets ---------------------------------------------------------------


@pytest.fixture
def a2m_respx_url() -> str:
    """The URL ``a2m_respx_router`` answers on: ``http://a2m.test/``. Override this fixture
    to mock the URL your code is configured with."""
    return DEFAULT_URL


@pytest.fixture
def a2m_respx_router(a2m_server: A2MServer, a2m_respx_url: str) -> Iterator[respx.MockRouter]:
    """An active respx router that answers every httpx request to ``a2m_respx_url``'s host
    from ``a2m_server``, as the HTTP binding would, with no sockets: code under test using
    ``A2MClient(url)``, ``AsyncA2MClient(url)`` or plain httpx (sync or async) just works.
    Any other request fails as unmocked unless the test adds a route for it
    (``a2m_respx_router.get("https://api.example/…").respond(…)``). While it is active, A2M
    HTTP transports send through httpx (``a2m.transports.use_httpx()``), which respx sees."""
    import respx

    from a2m.transports import use_httpx

    with use_httpx(), respx.mock(assert_all_called=False) as router:
        route_to_server(router, a2m_server, a2m_respx_url)
        yield router
