"""The bindings a test client can reach a server over, as one table.

:data:`BINDINGS` maps a binding's name (the id a parametrized test shows, ``[http]``) to the
function that opens a client on a fresh server over it. The plugin's ``a2m_client`` and
``a2m_async_client`` run once per entry, so supporting a new binding is one entry here."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from a2m import A2MClient, AsyncA2MClient

if TYPE_CHECKING:
    from a2m_server.config import ServerConfig

    from .servers import Servers

__all__ = ["BINDINGS", "Binding", "ClientT", "open_client"]

ClientT = TypeVar("ClientT", A2MClient, AsyncA2MClient)


class Binding(Protocol):
    """Opens a client of ``client_class`` on a new server built by ``servers`` from
    ``config``; ``options`` are the client's own (``timeout=``, ``max_retries=``)."""

    def __call__(
        self, client_class: type[ClientT], servers: Servers, config: ServerConfig, **options: Any
    ) -> ClientT: ...


def _in_process(
    client_class: type[ClientT], servers: Servers, config: ServerConfig, **options: Any
) -> ClientT:
    return client_class.in_process(servers.server(config), **options)


def _stdio(
    client_class: type[ClientT], servers: Servers, config: ServerConfig, **options: Any
) -> ClientT:
    return client_class.stdio(servers.stdio_command(config), **options)


def _http(
    client_class: type[ClientT], servers: Servers, config: ServerConfig, **options: Any
) -> ClientT:
    return client_class(servers.http_url(config=config), **options)


def _rest(
    client_class: type[ClientT], servers: Servers, config: ServerConfig, **options: Any
) -> ClientT:
    # The REST binding of the same HTTP server; the namespace matters only to draft mode.
    return client_class.rest(servers.http_url(config=config), namespace="a2m-test", **options)


BINDINGS: dict[str, Binding] = {
    "in-process": _in_process,
    "stdio": _stdio,
    "http": _http,
    "rest": _rest,
}
"""Every binding the plugin parametrizes over, in the order tests run."""


def open_client(
    client_class: type[ClientT],
    binding: str,
    servers: Servers,
    *,
    config: ServerConfig | None = None,
    capabilities: Iterable[str] | None = None,
    read_only: bool | None = None,
    **options: Any,
) -> ClientT:
    """A client of ``client_class`` over ``binding`` to a new server from ``servers``.

    The caller closes the client before closing ``servers``; an unknown binding name is a
    ``ValueError`` listing the known ones."""
    from ._config import server_config

    try:
        opener = BINDINGS[binding]
    except KeyError:
        known = ", ".join(BINDINGS)
        raise ValueError(f"unknown A2M binding {binding!r}; known: {known}") from None
    resolved = server_config(config, capabilities=capabilities, read_only=read_only)
    return opener(client_class, servers, resolved, **options)
