"""The REST routes under ``/a2m/v1``: one ASGI endpoint reads what the path names, checks the
method and the input, runs the operation on a worker thread and answers with the draft's
status codes, headers and error bodies. The gate in front has already applied the Origin
policy, authentication, the version header and the body limit."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from a2m_server._web import in_worker, principal_of
from a2m_server.errors import ProtocolError
from a2m_server.server import A2MServer
from a2m_types import DELETED_COUNT_HEADER, METHODS, EntryWrite, ErrorCode, QueryRequest

from .errors import RestError, json_response
from .openapi import openapi_document
from .params import (
    NO_BODY,
    Target,
    list_options,
    parse_target,
    read_json,
    read_model,
    whole_numbers,
)
from .service import (
    delete_entries,
    delete_entry,
    list_entries,
    query_entries,
    read_entry,
    upsert_entry,
)
from .view import RestView

__all__ = ["RestEndpoint", "run_in_view"]

log = logging.getLogger("a2m_server.rest")

T = TypeVar("T")


def run_in_view(
    server: A2MServer, principal: str | None, operation: Callable[..., T], *args: Any
) -> T:
    """Run ``operation(view, *args)`` for one request, as the JSON-RPC binding runs a call:
    a connection per request, A2M errors turned into REST ones, faults into 500."""
    try:
        connection = server.connect(transport="http", principal=principal)
    except RuntimeError:
        raise RestError("UNAVAILABLE", "the server is shutting down") from None
    with connection:
        view = RestView(server.protocol, connection.context)
        try:
            return operation(view, *args)
        except RestError:
            raise
        except ProtocolError as exc:
            raise RestError.from_protocol(exc) from None
        except Exception:
            log.exception("REST operation %s failed", getattr(operation, "__name__", operation))
            raise RestError(
                "BACKEND_ERROR",
                "internal error while handling this request; the server log has the details",
            ) from None


def _call_method(view: RestView, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One A2M method, failing as the JSON-RPC binding fails: a fault is INTERNAL_ERROR."""
    try:
        return view.proto.invoke(view.ctx, method, params)
    except ProtocolError:
        raise
    except Exception:
        log.exception("internal error in %s", method)
        raise ProtocolError(
            ErrorCode.INTERNAL_ERROR,
            f"internal error while handling {method}; the server log has the details",
        ) from None


class RestEndpoint:
    """Every HTTP route under ``/a2m/v1/`` (the WebSocket one lives in ``subscribe``)."""

    def __init__(self, server: A2MServer, *, authenticated: bool) -> None:
        self.server = server
        self.authenticated = authenticated

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            response = await self._respond(request)
        except RestError as exc:
            response = exc.response()
        await response(scope, receive, send)

    async def _run(self, request: Request, operation: Callable[..., T], *args: Any) -> T:
        principal = principal_of(request)
        return await in_worker(run_in_view, self.server, principal, operation, *args)

    async def _respond(self, request: Request) -> Response:
        target = parse_target(request.path_params.get("path", ""))
        allowed = target.allowed()
        method = "GET" if request.method == "HEAD" else request.method
        if request.method == "OPTIONS":
            return Response(status_code=204, headers={"Allow": _allow(allowed)})
        if method not in allowed:
            raise RestError(
                "METHOD_NOT_ALLOWED",
                f"{request.method} is not allowed here; use {' or '.join(allowed)}",
                headers={"Allow": _allow(allowed)},
            )
        if target.kind == "openapi":
            document = await self._run(request, openapi_document, self.authenticated)
            return json_response(document)
        if target.kind == "subscribe":
            raise RestError(
                "UPGRADE_REQUIRED",
                "subscribe is a WebSocket route: connect with ws:// or wss://",
                headers={"Upgrade": "websocket"},
            )
        if target.kind == "method":
            return await self._method(request, target, method)
        if target.kind == "query":
            body = read_model(QueryRequest, await read_json(request), "query")
            return json_response(await self._run(request, query_entries, target.namespace, body))
        if target.kind == "entry":
            if method == "GET":
                entry = await self._run(request, read_entry, target.namespace, target.key)
                return json_response(entry)
            await self._run(request, delete_entry, target.namespace, target.key)
            return Response(status_code=204)
        return await self._entries(request, target, method)

    async def _entries(self, request: Request, target: Target, method: str) -> Response:
        if method == "POST":
            write = read_model(EntryWrite, await read_json(request), "entry")
            created, entry = await self._run(request, upsert_entry, target.namespace, write)
            return json_response(entry, 201 if created else 200)
        options = list_options(request.query_params)
        if method == "GET":
            return json_response(await self._run(request, list_entries, target.namespace, options))
        deleted = await self._run(request, delete_entries, target.namespace, options)
        return Response(status_code=204, headers={DELETED_COUNT_HEADER: str(deleted)})

    async def _method(self, request: Request, target: Target, method: str) -> Response:
        params: Any = {}
        if method == "POST":
            params = await read_json(request)
            if params is NO_BODY:
                params = {}
            if not isinstance(params, dict):
                raise RestError.invalid_body("the body must be the method's params object")
            spec = METHODS.get(target.method)
            if spec is not None:
                params = whole_numbers(spec.params, params)
        result = await self._run(request, _call_method, target.method, params)
        return json_response(result)


def _allow(allowed: tuple[str, ...]) -> str:
    methods = [*allowed, "HEAD"] if "GET" in allowed else list(allowed)
    return ", ".join([*methods, "OPTIONS"])
