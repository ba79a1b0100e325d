"""httpx calls answered by an in-process A2M server through respx, so code that talks to an
A2M server over HTTP is tested with no sockets, no threads and no ports.

The answers are the HTTP binding's (§8.3): ``POST`` of one JSON-RPC message → ``200`` with
the response, or ``202`` for a notification; any other method → ``405``; the well-known
profile on ``GET``; a refused ``A2M-Protocol-Version`` → ``400``; with ``tokens``, a
missing or unknown bearer token → ``401``. The Origin policy and body limits are not
modelled: test those against a real server (``a2m_http_url``).

The client sends plain ``http://`` through its own HTTP/1.1 client, which respx cannot see,
unless ``a2m.transports.use_httpx()`` is active; while a router given to
:func:`route_to_server` is started it is, as if that block were inside ``use_httpx()``."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx
import respx

from a2m.transports import use_httpx_while
from a2m_types import PROTOCOL_HEADER, PROTOCOL_VERSION, ErrorCode, is_compatible

if TYPE_CHECKING:
    from a2m_server.server import A2MServer

__all__ = ["DEFAULT_URL", "InProcessHTTP", "route_to_server"]

DEFAULT_URL = "http://a2m.test/"
"""The URL the ``a2m_respx_router`` fixture answers on unless ``a2m_respx_url`` says otherwise;
``.test`` is reserved (RFC 2606), so it can never reach a real host."""

_WELL_KNOWN_PATH = "/.well-known/a2m-server.json"


class InProcessHTTP:
    """A respx side effect answering as the HTTP binding of ``server`` would at ``url``.

    JSON-RPC is served at ``url``'s path and the well-known profile at the host's root, as
    :func:`a2m_server.bindings.http.create_app` serves them; any other path is ``404``.
    Every request opens its own ``http`` connection, exactly like the real binding, so
    the server sees the same capabilities (no ``scopes`` without ``tokens``). Works for
    ``httpx.Client`` and ``httpx.AsyncClient`` alike."""

    def __init__(
        self,
        server: A2MServer,
        url: str = DEFAULT_URL,
        *,
        tokens: Mapping[str, str] | None = None,
    ) -> None:
        self.server = server
        self.url = httpx.URL(url)
        self.tokens = dict(tokens) if tokens is not None else None
        """Bearer token → principal; ``None`` serves unauthenticated callers."""
        self.requests: list[httpx.Request] = []
        """Every request answered, in order."""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        """Answer one request."""
        self.requests.append(request)
        principal: str | None = None
        if self.tokens is not None:
            principal = self._authenticate(request)
            if principal is None:
                return _unauthorized(request)
        version = request.headers.get(PROTOCOL_HEADER)
        if version is not None and not is_compatible(PROTOCOL_VERSION, version.strip()):
            return _version_refused(version)
        path = request.url.path
        if path == self.url.path:
            return self._rpc(request, principal)
        if path == _WELL_KNOWN_PATH:
            return self._well_known(request, principal)
        return httpx.Response(404, text="Not Found")

    def _rpc(self, request: httpx.Request, principal: str | None) -> httpx.Response:
        if request.method == "OPTIONS":
            return httpx.Response(204, headers={"Allow": "POST, OPTIONS"})
        if request.method != "POST":
            return _error(405, "method not allowed", headers={"Allow": "POST"})
        try:
            connection = self.server.connect(transport="http", principal=principal)
        except RuntimeError:
            return _error(503, "the server is shutting down")
        with connection:
            answer = connection.handle(request.content)
        if answer is None:
            return httpx.Response(202)
        return _json_text(200, answer)

    def _well_known(self, request: httpx.Request, principal: str | None) -> httpx.Response:
        if request.method not in ("GET", "HEAD"):
            return _error(405, "method not allowed", headers={"Allow": "GET, HEAD"})
        from a2m_server.dispatch import encode

        try:
            connection = self.server.connect(transport="http", principal=principal)
        except RuntimeError:
            return _error(503, "the server is shutting down")
        with connection:
            profile = connection.call("memory/describe")
        return _json_text(200, encode(profile))

    def _authenticate(self, request: httpx.Request) -> str | None:
        assert self.tokens is not None
        scheme, _, credentials = request.headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() != "bearer":
            return None
        return self.tokens.get(credentials.strip())


def route_to_server(
    router: respx.Router,
    server: A2MServer,
    url: str = DEFAULT_URL,
    *,
    tokens: Mapping[str, str] | None = None,
) -> respx.Route:
    """Add a route to ``router`` sending every request for ``url``'s scheme, host and port
    to ``server`` (see :class:`InProcessHTTP`); returns the route, whose ``calls`` record
    what was sent. Call it once per server to mock several hosts on one router.

    ```python
    with respx.mock() as router, A2MServer() as server:
        route_to_server(router, server, "http://memory.internal:8765/")
        with A2MClient("http://memory.internal:8765/") as client:
            client.remember("no sockets were harmed")
    ```
    """
    _routed.add(router)
    target = httpx.URL(url)
    lookups: dict[str, Any] = {"scheme": target.scheme, "host": target.host}
    if target.port is not None:
        lookups["port"] = target.port
    return router.route(**lookups).mock(side_effect=InProcessHTTP(server, url, tokens=tokens))


_routed: weakref.WeakSet[respx.Router] = weakref.WeakSet()
"""Every router :func:`route_to_server` added a route to (dropped when collected)."""


def _a_routed_router_is_started() -> bool:
    """Whether a router with a :func:`route_to_server` route is mocking httpx now: then A2M
    clients must send through httpx to reach it."""
    for router in list(_routed):
        mocker = getattr(router, "Mocker", None)
        if mocker is not None and router in mocker.routers:
            return True
    return False


use_httpx_while(_a_routed_router_is_started)


def _json_text(status: int, text: str) -> httpx.Response:
    from a2m_server.bindings import utf8

    return httpx.Response(status, content=utf8(text), headers={"Content-Type": "application/json"})


def _error(
    status: int, message: str, *, headers: Mapping[str, str] | None = None
) -> httpx.Response:
    return httpx.Response(status, json={"error": message}, headers=headers)


def _unauthorized(request: httpx.Request) -> httpx.Response:
    challenge = 'Bearer realm="a2m"'
    if "authorization" in request.headers:
        challenge += ', error="invalid_token"'
    return _error(401, "missing or invalid bearer token", headers={"WWW-Authenticate": challenge})


def _version_refused(version: str) -> httpx.Response:
    from a2m_server.dispatch import error_response

    refusal = error_response(
        None,
        ErrorCode.PROTOCOL_NOT_SUPPORTED,
        f"this server speaks {PROTOCOL_VERSION}, not {version.strip()!r}",
        {"supported": [PROTOCOL_VERSION]},
    )
    return httpx.Response(400, json=refusal)
