"""The REST binding (``/a2m/v1``): the draft's entry routes, every A2M method as
``memory:{method}``, the OpenAPI document and the WebSocket subscription, all over the
same store as JSON-RPC. ``docs/rest-binding.md`` is the contract."""

from __future__ import annotations

from typing import Any

from starlette.datastructures import URLPath
from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

from a2m_server.server import A2MServer
from a2m_types import REST_BASE_PATH

from .errors import RestError
from .routes import RestEndpoint
from .subscribe import SubscribeEndpoint

__all__ = ["rest_routes"]

_PREFIX = REST_BASE_PATH + "/"


class _RestRoute(BaseRoute):
    """Every path under ``/a2m/v1/``, whatever it holds. A route pattern would not do: a
    key may hold any character but a control one, and a request naming one must still
    get the REST error body rather than the router's plain-text 404."""

    def __init__(self, server: A2MServer, *, authenticated: bool, methods: bool) -> None:
        self.http = RestEndpoint(server, authenticated=authenticated)
        self.subscribe = SubscribeEndpoint(server)
        self.methods = methods

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] in ("http", "websocket") and scope["path"].startswith(_PREFIX):
            params = {**scope.get("path_params", {}), "path": scope["path"][len(_PREFIX) :]}
            return Match.FULL, {"path_params": params}
        return Match.NONE, {}

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        raise NoMatchFound(name, path_params)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"][len(_PREFIX) :]
        if not self.methods and scope["type"] == "http" and _beyond_the_draft(path):
            refusal = RestError("NOT_FOUND", f"no REST route at {REST_BASE_PATH}/{path}")
            await refusal.response()(scope, receive, send)
            return
        if scope["type"] == "http":
            await self.http(scope, receive, send)
        else:
            await self.subscribe.handle(WebSocket(scope, receive, send))


def _beyond_the_draft(path: str) -> bool:
    """Whether ``path`` (after ``/a2m/v1/``) names a route the draft does not define."""
    return path.startswith("memory:") or path == "openapi.json"


def rest_routes(
    server: A2MServer, *, authenticated: bool = False, methods: bool = True
) -> list[BaseRoute]:
    """The routes to serve behind the HTTP binding's gate; ``authenticated`` says whether
    that gate requires bearer tokens (the OpenAPI document then declares them).
    ``methods=False`` serves the draft's routes alone: ``memory:{method}`` and
    ``openapi.json`` are ``404 NOT_FOUND``."""
    return [_RestRoute(server, authenticated=authenticated, methods=methods)]
