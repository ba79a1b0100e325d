"""Transports: how a JSON-RPC request object reaches a server and its response comes back.

One module per binding (HTTP, stdio, in-process, REST); these are the only modules that
import httpx. Write your own by subclassing :class:`Transport` or :class:`AsyncTransport` and pass
it as ``A2MClient(transport=…)``.

HTTP goes through a lean HTTP/1.1 client for plain ``http://`` URLs, through httpx for
``https://``, behind a proxy, with an injected ``http_client``, or while :func:`use_httpx`
is active: httpx-level mocks (respx) see only requests sent through httpx."""

from ._base import AsyncTransport, NotificationHandler, Transport
from .async_stdio import AsyncStdioTransport
from .http import AsyncHTTPTransport, HTTPTransport, use_httpx, use_httpx_while
from .in_process import (
    AsyncInProcessTransport,
    ConnectableServer,
    InProcessTransport,
    ServerConnection,
)
from .rest import AsyncRESTTransport, RESTTransport
from .stdio import StdioTransport

__all__ = [
    "AsyncHTTPTransport",
    "AsyncInProcessTransport",
    "AsyncRESTTransport",
    "AsyncStdioTransport",
    "AsyncTransport",
    "ConnectableServer",
    "HTTPTransport",
    "InProcessTransport",
    "NotificationHandler",
    "RESTTransport",
    "ServerConnection",
    "StdioTransport",
    "Transport",
    "use_httpx",
    "use_httpx_while",
]
