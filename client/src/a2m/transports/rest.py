"""REST (``/a2m/v1``) as a transport: every ``memory/*`` JSON-RPC request becomes REST calls
and their replies a JSON-RPC response, so nothing above the transport knows which binding
it speaks.

Which REST a server offers is decided once, lazily, by the first request:
``GET /a2m/v1/memory:describe``. A server answering it offers every A2M method as
``POST /a2m/v1/memory:{method}`` (*full* mode: the params are the body, a ``200`` body is
the result). One answering ``404`` or ``405`` whose draft list route (``GET
/a2m/v1/{namespace}/entries``) answers with an entry list offers only the REST draft's
routes (*draft* mode, see :mod:`a2m.transports._rest_draft`); one whose list route fails
too is not an A2M server, and the first call raises what that reply says. describe then declares what those routes can
carry, and the rest is refused before anything is sent.

A REST error body (``{code, message, a2m_code?, data?}``) becomes the JSON-RPC error of its
A2M code, so callers get the classes they would over JSON-RPC; the gate's refusals (401, an
Origin's 403, 413) and statuses such as 429 and 5xx raise the HTTP transport's errors,
``Retry-After`` included. REST has no push: ``memory/events/subscribe`` raises
:class:`~a2m.errors.CapabilityNotSupported` unsent. An injected ``httpx.Client`` /
``httpx.AsyncClient`` is used as is and never closed."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

import httpx

from a2m.errors import (
    A2MConnectError,
    A2MConnectionError,
    A2MTimeoutError,
    CapabilityNotSupported,
    MethodNotFound,
)
from a2m_types import REST_BASE_PATH
from a2m_types.rest import validate_namespace

from ._base import AsyncTransport, Transport, encode_message
from ._hints import check_url, is_html
from ._rest_draft import Draft
from ._rest_wire import Exchange, HttpCall, Reply, Steps, answered, expect
from .http import LoopClients, _headers, _raise_transport

__all__ = ["AsyncRESTTransport", "RESTTransport"]

Mode = Literal["full", "draft"]

_SUBSCRIBE = "memory/events/subscribe"
_PREFIX = "memory/"


def _after_answers(error: A2MConnectError, answers: int, method: str | None) -> A2MConnectionError:
    """``error`` as the call's failure. A connect error proves that request never left,
    and so that the call did nothing, only when it was the call's first: after requests
    of the same call were answered (a draft forget deletes key by key), the call may
    have acted in part, and is no longer safe to send again whole."""
    if answers == 0:
        return error
    return A2MConnectionError(
        f"{error.message}; {answers} earlier request(s) of this call were answered, so it "
        "may have acted in part",
        method=method,
        data=error.data,
    )


def _rest_base(url: str) -> str:
    """``{url}/a2m/v1/``; a URL that already ends with the base path is kept as it is."""
    base = url.rstrip("/")
    if not base.endswith(REST_BASE_PATH):
        base += REST_BASE_PATH
    return base + "/"


def _asks(value: Any) -> bool:
    return value is not None and value is not False


class _Exchanges:
    """The translation both transports drive: the mode, once known, and each request's
    exchange. Deciding the mode twice (two first requests at once) is harmless."""

    def __init__(self, base_url: str, namespace: str) -> None:
        self.base = _rest_base(base_url)
        self.draft = Draft(validate_namespace(namespace), base_url)
        self.mode: Mode | None = None

    def exchange(self, request: Mapping[str, Any]) -> Exchange:
        """The exchange carrying ``request``; what can be refused unsent raises here."""
        method = request.get("method")
        if not isinstance(method, str) or not method.startswith(_PREFIX):
            raise MethodNotFound(f"{method!r} is not an A2M method", method=str(method))
        if method == _SUBSCRIBE:
            raise CapabilityNotSupported(
                "REST has no server-to-client channel, so events cannot be pushed; use "
                "watch() to poll memory/events instead (nothing was sent)",
                method=method,
                data={"capability": "events", "push": False},
            )
        params = request.get("params") or {}
        return answered(request, self._steps(method, dict(params)))

    def _steps(self, method: str, params: dict[str, Any]) -> Steps[Any]:
        described: Any = None
        if self.mode is None:
            reply = yield HttpCall("GET", "memory:describe")
            if reply.status in (404, 405) and not is_html(reply.content, reply.headers):
                # Any web server answers 404 to a route it lacks: only the draft's own list
                # route answering as the draft does makes this a draft server.
                yield from self.draft.confirm(method)
                self.mode = "draft"
            else:
                described = expect(reply, method)
                self.mode = "full"
        if self.mode == "draft":
            return (yield from self.draft.steps(method, params))
        if method == "memory/describe" and described is not None and not _asks(params.get("owner")):
            return described  # the probe already asked the same question
        body = encode_message(params)
        reply = yield HttpCall("POST", "memory:" + method[len(_PREFIX) :], body=body)
        return expect(reply, method)


class _Clock:
    """One call's timeout, shared by every HTTP request the call takes."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self._end = None if timeout is None else time.monotonic() + timeout

    def left(self, method: str | None, url: str) -> float | None:
        if self._end is None:
            return None
        left = self._end - time.monotonic()
        if left <= 0:
            raise A2MTimeoutError(
                f"no answer from {url} within {self.timeout}s (the call took several requests)",
                method=method,
            )
        return left


def _reply(response: httpx.Response) -> Reply:
    return Reply(
        status=response.status_code,
        headers=response.headers,
        content=response.content,
        url=str(response.request.url),
        reason=response.reason_phrase,
    )


class _Common:
    """Construction and introspection both transports share."""

    def __init__(
        self,
        base_url: str,
        namespace: str,
        token: str | None,
        headers: Mapping[str, str] | None,
    ) -> None:
        self._exchanges = _Exchanges(check_url(base_url, "A2M REST base URL"), namespace)
        self._headers = _headers(token, headers)

    @property
    def base_url(self) -> str:
        """The REST base, ``…/a2m/v1/``."""
        return self._exchanges.base

    @property
    def namespace(self) -> str:
        """The default namespace of draft mode."""
        return self._exchanges.draft.namespace

    @property
    def mode(self) -> Mode | None:
        """``"full"`` (every A2M method), ``"draft"`` (the draft's routes only), or ``None``
        until the first request has found out."""
        return self._exchanges.mode

    def _request(self, call: HttpCall, clock: _Clock, method: str | None) -> dict[str, Any]:
        url = self._exchanges.base + call.path
        return {
            "method": call.method,
            "url": url,
            "params": list(call.query) or None,
            "content": call.body,
            "headers": self._headers,
            "timeout": clock.left(method, url),
        }


class RESTTransport(_Common, Transport):
    """Synchronous A2M over the REST binding at ``base_url``; thread-safe, pooling
    connections in one httpx client. ``namespace`` is where draft mode reads and writes
    unless a call names another; a full server does not need it."""

    def __init__(
        self,
        base_url: str,
        *,
        namespace: str,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, namespace, token, headers)
        self._owns_client = http_client is None
        self._client = http_client if http_client is not None else httpx.Client()

    def handle_request(self, request: dict[str, Any], *, timeout: float | None) -> dict[str, Any]:
        """Carry ``request`` over REST and return its JSON-RPC response object."""
        clock = _Clock(timeout)
        method = request.get("method")
        exchange = self._exchanges.exchange(request)
        answers = 0
        try:
            call = next(exchange)
            while True:
                try:
                    reply = self._send(call, clock, method)
                except A2MConnectError as exc:
                    raise _after_answers(exc, answers, method) from exc
                answers += 1
                call = exchange.send(reply)
        except StopIteration as done:
            response: dict[str, Any] = done.value
            return response
        finally:
            exchange.close()

    def _send(self, call: HttpCall, clock: _Clock, method: str | None) -> Reply:
        options = self._request(call, clock, method)
        try:
            return _reply(self._client.request(**options))
        except (httpx.TransportError, httpx.DecodingError) as exc:
            _raise_transport(exc, method, options["url"])

    def close(self) -> None:
        """Close the httpx client, unless it was injected."""
        if self._owns_client:
            self._client.close()


class AsyncRESTTransport(_Common, AsyncTransport):
    """Asynchronous A2M over the REST binding at ``base_url``; task-safe, pooling
    connections in one httpx client. ``namespace`` is where draft mode reads and writes
    unless a call names another; a full server does not need it."""

    def __init__(
        self,
        base_url: str,
        *,
        namespace: str,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, namespace, token, headers)
        # An httpx pool belongs to the loop it was opened on: one per loop when it is ours.
        self._clients = LoopClients(httpx.AsyncClient, http_client)

    async def handle_async_request(
        self, request: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        """Carry ``request`` over REST and return its JSON-RPC response object."""
        clock = _Clock(timeout)
        method = request.get("method")
        exchange = self._exchanges.exchange(request)
        answers = 0
        try:
            call = next(exchange)
            while True:
                try:
                    reply = await self._send(call, clock, method)
                except A2MConnectError as exc:
                    raise _after_answers(exc, answers, method) from exc
                answers += 1
                call = exchange.send(reply)
        except StopIteration as done:
            response: dict[str, Any] = done.value
            return response
        finally:
            exchange.close()

    async def _send(self, call: HttpCall, clock: _Clock, method: str | None) -> Reply:
        options = self._request(call, clock, method)
        try:
            client = await self._clients.get(method)
            return _reply(await client.request(**options))
        except (httpx.TransportError, httpx.DecodingError) as exc:
            _raise_transport(exc, method, options["url"])

    async def aclose(self) -> None:
        """Close the httpx client of this loop (the others' close as their loops end),
        unless it was injected."""
        await self._clients.aclose()
