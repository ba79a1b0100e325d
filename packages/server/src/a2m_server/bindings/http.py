"""The HTTP binding (§8.3): an ASGI app serving JSON-RPC by ``POST /``, the well-known
profile and the REST binding (``/a2m/v1``), behind one gate that applies the Origin
policy, bearer auth and transport limits.

Every route, including ones added later through ``routes=`` and WebSocket ones, passes the
same gate, in this order: Origin (403) → credentials (401) → ``A2M-Protocol-Version``
(400) → body size (413). A WebSocket is refused before it is accepted. Only then does a
request reach the protocol, always on a worker thread. Under ``/a2m/v1`` a refusal
carries the REST error body (``{"code", "message"}``)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from a2m_server._web import PRINCIPAL_SCOPE_KEY as _PRINCIPAL_SCOPE_KEY
from a2m_server._web import addressed_directly, in_worker, principal_of, utf8
from a2m_server.auth import TokenMap
from a2m_server.dispatch import encode, error_response
from a2m_server.server import A2MServer
from a2m_types import (
    DELETED_COUNT_HEADER,
    PROTOCOL_HEADER,
    PROTOCOL_VERSION,
    REST_BASE_PATH,
    ErrorCode,
    is_compatible,
)

from ._head_limit import MAX_HEAD_BYTES, uvicorn_http_options

__all__ = [
    "CORS_ALLOWED_HEADERS",
    "CORS_ALLOWED_METHODS",
    "CORS_EXPOSED_HEADERS",
    "DEFAULT_MAX_BODY_BYTES",
    "MAX_HEAD_BYTES",
    "WELL_KNOWN_PATH",
    "create_app",
    "principal_of",
    "uvicorn_http_options",
]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""Largest request body accepted unless ``max_body_bytes`` says otherwise."""

WELL_KNOWN_PATH = "/.well-known/a2m-server.json"
"""Where the describe result is served (§8.3.3)."""

CORS_ALLOWED_METHODS = ("POST", "GET", "DELETE")
CORS_ALLOWED_HEADERS = ("Content-Type", "Authorization", PROTOCOL_HEADER)
CORS_EXPOSED_HEADERS = (DELETED_COUNT_HEADER,)

_BODY_SCOPE_KEY = "a2m.body"
_UI_PREFIX = "/ui"


def _is_ui_path(path: str) -> bool:
    return path == _UI_PREFIX or path.startswith(_UI_PREFIX + "/")


_JSON_HEADERS = [(b"content-type", b"application/json")]


_ORIGIN = re.compile(r"^[a-z][a-z0-9+.-]*://[^/\s?#]+$")


def create_app(
    server: A2MServer,
    *,
    allowed_origins: Iterable[str] = (),
    tokens: TokenMap | Mapping[str, str] | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    routes: Iterable[BaseRoute] = (),
    rest: bool = True,
    rest_methods: bool = True,
    ui: bool = True,
) -> Starlette:
    """The ASGI app for ``server``.

    ``allowed_origins`` lists the browser origins (``"https://app.example"``) that may call
    it; by default none may, and a request without ``Origin`` is always let through.
    ``tokens`` turns on bearer authentication: every request must carry a token it maps to
    a principal, from which the protocol derives ``owner``; without it the server is the
    unauthenticated local kind and does not advertise ``scopes``. ``routes`` adds routes
    behind the same gate, ahead of the REST binding's; they read the caller with
    :func:`principal_of` and find the server at ``request.app.state.a2m_server``.
    ``rest=False`` leaves the REST binding (``/a2m/v1``) out; ``rest_methods=False`` serves
    only the REST draft's own routes there (entries, query, subscribe), answering
    ``memory:{method}`` and the OpenAPI document ``404 NOT_FOUND`` as a server implementing
    the draft alone would. ``ui=False`` leaves the agent memory page (``/ui/``) out; it
    authenticates with the same ``tokens``, through a login form and a session cookie."""
    if max_body_bytes < 1:
        raise ValueError("max_body_bytes must be at least 1")
    token_map = tokens if isinstance(tokens, TokenMap) or tokens is None else TokenMap(tokens)
    policy = _Policy(
        origins=frozenset(_normalise_origin(origin) for origin in allowed_origins),
        tokens=token_map,
        max_body_bytes=max_body_bytes,
    )
    extra: list[BaseRoute] = []
    if rest:
        from a2m_server.rest import rest_routes  # the REST package imports this module

        extra = rest_routes(server, authenticated=token_map is not None, methods=rest_methods)
    rpc = _RpcEndpoint(server)
    page: ASGIApp | None = None
    if ui:
        from a2m_server.ui import create_ui_app

        page = create_ui_app(server, tokens=token_map, max_body_bytes=max_body_bytes)
    app = Starlette(
        routes=[*_protocol_routes(server, rpc), *routes, *extra],
        middleware=[Middleware(_Gate, policy=policy, rpc=rpc, ui=page)],
    )
    app.state.a2m_server = server
    return app


def _normalise_origin(origin: str) -> str:
    normalised = origin.strip().rstrip("/").lower()
    if normalised != "null" and not _ORIGIN.match(normalised):
        raise ValueError(
            f"not a browser origin: {origin!r} (expected scheme://host[:port], e.g. https://app.example)"
        )
    return normalised


# --- routes ---------------------------------------------------------------------------


def _protocol_routes(server: A2MServer, rpc: _RpcEndpoint) -> list[BaseRoute]:
    async def well_known(request: Request) -> Response:
        principal = principal_of(request)
        try:
            profile = await in_worker(_describe, server, principal)
        except _ServerClosed:
            return _transport_error(503, "the server is shutting down")
        return Response(utf8(encode(profile)), media_type="application/json")

    return [
        # An ASGI endpoint sees every method, so it answers 405 for all but POST itself.
        Route("/", rpc),
        Route(WELL_KNOWN_PATH, well_known, methods=["GET"]),
    ]


class _RpcEndpoint:
    """``POST /``: one JSON-RPC message per request (§8.3)."""

    def __init__(self, server: A2MServer) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if method != "POST":
            if method == "OPTIONS":
                response = Response(status_code=204, headers={"Allow": "POST, OPTIONS"})
            else:
                response = _transport_error(405, "method not allowed", headers={"Allow": "POST"})
            await response(scope, receive, send)
            return
        # The gate has read the body already; without the gate, read it here.
        body = scope.get(_BODY_SCOPE_KEY)
        if body is None:
            body = await Request(scope, receive).body()
        principal = scope.get(_PRINCIPAL_SCOPE_KEY)
        try:
            answer = await in_worker(_handle_once, self.server, principal, body)
        except _ServerClosed:
            await _transport_error(503, "the server is shutting down")(scope, receive, send)
            return
        if answer is None:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        # The response as raw ASGI messages: a Response object would build and copy the
        # same two headers through several layers on every call.
        payload = utf8(answer)
        headers = [*_JSON_HEADERS, (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


class _ServerClosed(Exception):
    """The server was closed while the app still served requests."""


def _handle_once(server: A2MServer, principal: str | None, body: bytes) -> str | None:
    # A connection per request: HTTP has no session, and connections are cheap.
    try:
        connection = server.connect(transport="http", principal=principal)
    except RuntimeError as exc:
        raise _ServerClosed from exc
    with connection:
        return connection.handle(body)


def _describe(server: A2MServer, principal: str | None) -> dict[str, Any]:
    try:
        connection = server.connect(transport="http", principal=principal)
    except RuntimeError as exc:
        raise _ServerClosed from exc
    with connection:
        return connection.call("memory/describe")


def _transport_error(
    status: int, message: str, *, headers: Mapping[str, str] | None = None
) -> Response:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


# --- the gate -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Policy:
    origins: frozenset[str]
    tokens: TokenMap | None
    max_body_bytes: int


class _BodyTooLarge(Exception):
    pass


class _ClientGone(Exception):
    pass


def _rebound(scope: Scope, headers: Headers) -> bool:
    """Whether a request reached a server listening on a loopback address under a DNS
    name: what a page of another site does once its name is rebound to 127.0.0.1, and a
    browser sends no ``Origin`` with a simple ``GET``. (A server listening elsewhere is
    meant to be reached under names; it is warned to use tokens.)"""
    server = scope.get("server")
    if not server or not _is_loopback(str(server[0])):
        return False
    return not addressed_directly(headers.get("host", ""))


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class _Gate:
    """Admits a request or WebSocket to the app, or refuses it at the transport level."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        policy: _Policy,
        rpc: ASGIApp | None = None,
        ui: ASGIApp | None = None,
    ) -> None:
        self.app = app
        self.policy = policy
        self.rpc = rpc
        self.ui = ui

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if self.ui is not None and _is_ui_path(scope["path"]):
            # The memory page authenticates by its own login and session cookie, checks the
            # origin of every form it takes, and limits what it reads (a2m_server.ui).
            await self.ui(scope, receive, send)
            return
        websocket = scope["type"] == "websocket"
        # Under /a2m/v1 a refusal has the REST error body; elsewhere the binding's own.
        rest = scope["path"].startswith(REST_BASE_PATH + "/")
        headers = Headers(scope=scope)
        if self.policy.tokens is None and _rebound(scope, headers):
            refusal = _refusal(
                403,
                "HOST_NOT_ALLOWED",
                "without tokens a server listening on a loopback address answers only at an "
                "IP address or localhost; serve with tokens to reach it under another name",
                rest=rest,
            )
            await _refuse(refusal, scope, receive, send)
            return
        origin = headers.get("origin")
        if origin is not None:
            if origin.strip().rstrip("/").lower() not in self.policy.origins:
                refusal = _refusal(403, "ORIGIN_NOT_ALLOWED", "origin not allowed", rest=rest)
                await _refuse(refusal, scope, receive, send)
                return
            if not websocket:
                send = _with_cors(send, origin)
                if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
                    # A preflight never carries credentials, so it is answered before auth.
                    await _preflight()(scope, receive, send)
                    return

        principal: str | None = None
        if self.policy.tokens is not None:
            principal = _authenticate(headers, self.policy.tokens)
            if principal is None:
                await _refuse(_unauthorized(headers, rest=rest), scope, receive, send)
                return

        version = headers.get(PROTOCOL_HEADER)
        if version is not None and not is_compatible(PROTOCOL_VERSION, version.strip()):
            await _refuse(_version_refused(version, rest=rest), scope, receive, send)
            return

        scope[_PRINCIPAL_SCOPE_KEY] = principal
        if websocket:
            await self.app(scope, receive, send)
            return
        refused = self._check_length(headers, rest=rest)
        if refused is not None:
            await refused(scope, receive, send)
            return
        try:
            body = await _read_body(receive, self.policy.max_body_bytes)
        except _BodyTooLarge:
            await self._too_large(rest=rest)(scope, receive, send)
            return
        except _ClientGone:
            return
        scope[_BODY_SCOPE_KEY] = body
        if self.rpc is not None and scope["path"] == "/" and not scope.get("root_path"):
            # The first route, reached without the router: every call takes this path, and
            # matching each route in turn and wrapping the request cost more than the rest
            # of the gate does.
            await self.rpc(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)

    def _check_length(self, headers: Headers, *, rest: bool) -> Response | None:
        declared = headers.get("content-length")
        if declared is None:
            return None
        try:
            length = int(declared)
        except ValueError:
            return _refusal(400, "INVALID_BODY", "invalid Content-Length", rest=rest)
        if length < 0:
            return _refusal(400, "INVALID_BODY", "invalid Content-Length", rest=rest)
        if length > self.policy.max_body_bytes:
            return self._too_large(rest=rest)
        return None

    def _too_large(self, *, rest: bool) -> Response:
        # No "Connection: close": closing a socket with unread body bytes makes the kernel
        # send a reset, which can reach the client before this response does. The server
        # discards whatever of the body still arrives without buffering it.
        message = f"request body larger than {self.policy.max_body_bytes} bytes"
        return _refusal(413, "BODY_TOO_LARGE", message, rest=rest)


def _refusal(
    status: int,
    code: str,
    message: str,
    *,
    rest: bool,
    headers: Mapping[str, str] | None = None,
) -> Response:
    if not rest:
        return _transport_error(status, message, headers=headers)
    return JSONResponse({"code": code, "message": message}, status_code=status, headers=headers)


async def _refuse(response: Response, scope: Scope, receive: Receive, send: Send) -> None:
    """Send a refusal; a WebSocket is refused before it is accepted, with the response
    itself where the server supports that, else with a policy-violation close (which
    the server answers with 403)."""
    if scope["type"] != "websocket" or "websocket.http.response" in scope.get("extensions", {}):
        await response(scope, receive, send)
    else:
        await send({"type": "websocket.close", "code": 1008, "reason": ""})


def _authenticate(headers: Headers, tokens: TokenMap) -> str | None:
    scheme, _, credentials = headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return tokens.principal_for(credentials.strip())


def _unauthorized(headers: Headers, *, rest: bool) -> Response:
    challenge = 'Bearer realm="a2m"'
    if "authorization" in headers:
        challenge += ', error="invalid_token"'
    return _refusal(
        401,
        "UNAUTHORIZED",
        "missing or invalid bearer token",
        rest=rest,
        headers={"WWW-Authenticate": challenge},
    )


def _version_refused(version: str, *, rest: bool) -> Response:
    message = f"this server speaks {PROTOCOL_VERSION}, not {version.strip()!r}"
    data = {"supported": [PROTOCOL_VERSION]}
    if rest:
        body: dict[str, Any] = {
            "code": "PROTOCOL_NOT_SUPPORTED",
            "message": message,
            "a2m_code": int(ErrorCode.PROTOCOL_NOT_SUPPORTED),
            "data": data,
        }
    else:
        body = error_response(None, ErrorCode.PROTOCOL_NOT_SUPPORTED, message, data)
    return JSONResponse(body, status_code=400)


def _preflight() -> Response:
    return Response(
        status_code=204,
        headers={
            "Access-Control-Allow-Methods": ", ".join(CORS_ALLOWED_METHODS),
            "Access-Control-Allow-Headers": ", ".join(CORS_ALLOWED_HEADERS),
            "Access-Control-Max-Age": "600",
        },
    )


def _with_cors(send: Send, origin: str) -> Send:
    async def send_with_cors(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            headers["Access-Control-Allow-Origin"] = origin
            headers["Access-Control-Expose-Headers"] = ", ".join(CORS_EXPOSED_HEADERS)
            headers.add_vary_header("Origin")
        await send(message)

    return send_with_cors


async def _read_body(receive: Receive, limit: int) -> bytes:
    # Read chunk by chunk so a chunked body is refused as soon as it passes the limit.
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
