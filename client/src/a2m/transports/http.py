"""JSON-RPC over HTTP (§8.3): one ``POST`` per call, with the bearer token and
``A2M-Protocol-Version`` header, and HTTP failures mapped onto the error tree.

Which client carries the ``POST``: an injected ``httpx.Client`` / ``httpx.AsyncClient`` is
used as is and never closed. Otherwise a plain ``http://`` URL that no proxy in the
environment applies to (``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, as httpx reads them)
goes through the lean HTTP/1.1 client of :mod:`a2m.transports._http1`, which costs a call
a fraction of what httpx does; anything else (``https://``, a proxy) through a pooled httpx
client, as does every call made while :func:`use_httpx` is active (or a condition given to
:func:`use_httpx_while` holds), so httpx-level mocks such as respx see the requests. Both
paths read the response through one function, so statuses map the same way."""

from __future__ import annotations

import asyncio
import email.utils
import json
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Generic, NoReturn, TypeVar
from urllib.parse import SplitResult, urlsplit

import httpx

from a2m._loops import PerLoop, current_loop
from a2m.errors import (
    A2MConnectionError,
    A2MEventLoopError,
    A2MHTTPStatusError,
    A2MPoolTimeout,
    A2MTimeoutError,
    ResponseValidationError,
    error_for_status,
)
from a2m_types import PROTOCOL_HEADER, PROTOCOL_VERSION

from ._base import AsyncTransport, Transport, decode_message, encode_message
from ._hints import check_url, connect_error, status_cause
from ._http1 import MAX_CONNECTIONS, MAX_IDLE, Origin, check_max_connections
from ._http1_async import AsyncPool, async_supported
from ._http1_sync import SyncPool

__all__ = ["AsyncHTTPTransport", "HTTPTransport", "use_httpx", "use_httpx_while"]

_BODY_SNIPPET = 500


def _headers(token: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        PROTOCOL_HEADER: PROTOCOL_VERSION,
    }
    if token:
        headers["Authorization"] = f"Bearer {token}"
    headers.update(extra or {})
    return headers


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds from now: delta-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _raise_transport(
    exc: httpx.TransportError | httpx.DecodingError, method: str | None, url: str
) -> NoReturn:
    if isinstance(exc, httpx.DecodingError):  # a body its Content-Encoding does not decode
        raise A2MConnectionError(
            f"the response from {url} could not be decoded: {exc}", method=method, retryable=False
        ) from exc
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
        raise connect_error(url, exc, method) from exc
    if isinstance(exc, httpx.PoolTimeout):  # no connection came free: nothing was sent
        raise A2MPoolTimeout(
            f"no connection to {url} came free in time: all were busy (pool timeout)",
            method=method,
        ) from exc
    if isinstance(exc, httpx.TimeoutException):
        raise A2MTimeoutError(f"no answer from {url} in time ({exc})", method=method) from exc
    if isinstance(exc, httpx.UnsupportedProtocol):
        error = A2MConnectionError(f"cannot send to {url}: {exc}", method=method, retryable=False)
        error.hint = "Give the URL with its scheme: http://host:port/ or https://host/."
        raise error from exc
    if isinstance(exc, httpx.LocalProtocolError):
        raise A2MConnectionError(
            f"cannot send to {url}: {exc}", method=method, retryable=False
        ) from exc
    raise A2MConnectionError(f"the connection to {url} failed: {exc}", method=method) from exc


def _response_object(
    status: int,
    reason: str,
    headers: Mapping[str, str],
    body: bytes,
    method: str | None,
    url: str,
) -> dict[str, Any]:
    """The JSON-RPC response object an HTTP response carries, or the error it stands for.
    ``headers`` is looked up by lower-case name."""
    if status == 200 or (200 < status < 300 and body):
        message = decode_message(body, method=method)
        if not isinstance(message, dict):
            raise ResponseValidationError(
                f"expected one JSON-RPC response object, got {type(message).__name__}",
                method=method,
                data=message,
            )
        return message
    if 200 <= status < 300:
        raise ResponseValidationError(
            f"HTTP {status} with an empty body; a request with an id must be answered "
            "200 with a JSON-RPC response (§8.3)",
            method=method,
        )
    if status == 400:
        # §8.3.2: a refused protocol version is a 400 carrying a JSON-RPC error object, which
        # the client maps to its protocol class like any other error.
        try:
            message = decode_message(body, method=method)
        except ResponseValidationError:
            message = None
        if isinstance(message, dict) and isinstance(message.get("error"), dict):
            return message
    raise _status_error(status, reason, headers, body, method, url)


def _status_error(
    status: int,
    reason: str,
    headers: Mapping[str, str],
    body: bytes,
    method: str | None,
    url: str,
) -> A2MHTTPStatusError:
    text = body.decode("utf-8", "replace")
    detail: str | None = None
    code: int | None = None
    data: Any = None
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, str):
            detail = error
        elif isinstance(error, dict):
            detail = str(error.get("message", "")) or None
            code = error.get("code") if isinstance(error.get("code"), int) else None
            data = error.get("data")
    message = f"HTTP {status} {reason or 'error'} from {url}"
    if detail:
        message += f": {detail}"
    cause = status_cause(status, body, headers.get("content-type") or "", detail is not None)
    if cause is not None:
        message += f": {cause[0]}"
    error = error_for_status(status)(
        message,
        status=status,
        body=text[:_BODY_SNIPPET],
        retry_after=_retry_after(headers.get("retry-after")),
        method=method,
        code=code,
        data=data,
    )
    if cause is not None:
        error.hint = cause[1]
    return error


def _httpx_response(response: httpx.Response, method: str | None) -> dict[str, Any]:
    return _response_object(
        response.status_code,
        response.reason_phrase,
        response.headers,
        response.content,
        method,
        str(response.request.url),
    )


# --- choosing the path ----------------------------------------------------------------------

_hook_lock = threading.Lock()
_forced = 0
_conditions: list[Callable[[], bool]] = []


@contextmanager
def use_httpx() -> Iterator[None]:
    """While active, in every thread and task, HTTP transports without an injected client
    send through their httpx client, so an httpx-level mock (respx) answers them; it is read
    at each request, so clients made before it are covered. Nestable.

    ```python
    with respx.mock() as router, use_httpx():
        router.post("http://a2m.test/").respond(json={...})
        A2MClient("http://a2m.test/").recall("x")  # answered by respx
    ```
    """
    global _forced
    with _hook_lock:
        _forced += 1
    try:
        yield
    finally:
        with _hook_lock:
            _forced -= 1


def use_httpx_while(condition: Callable[[], bool]) -> None:
    """Make HTTP transports send through httpx whenever ``condition()`` is true, from now
    on: for a mocking kit that knows when its mock is active (``a2m_testing`` registers
    "a router of ``route_to_server`` is started"). It is called at every request while
    registered, so it must be cheap and thread-safe; it cannot be unregistered."""
    with _hook_lock:
        _conditions.append(condition)


def _httpx_forced() -> bool:
    if _forced:
        return True
    return bool(_conditions) and any(condition() for condition in tuple(_conditions))


def _no_proxy_for(parts: SplitResult) -> bool:
    """Whether httpx, trusting the environment, would connect to this ``http://`` URL
    directly: no ``HTTP_PROXY`` / ``ALL_PROXY`` (either case), or ``NO_PROXY`` covers it."""
    proxies = urllib.request.getproxies_environment()
    if not (proxies.get("http") or proxies.get("all")):
        return True
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # not in typeshed
    return bool(bypass(parts.netloc, proxies))


_FRAMING = frozenset({"host", "content-length", "transfer-encoding", "connection", "expect"})
_URI_CHARS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%"
)


def _lean_origin(url: str, headers: Mapping[str, str]) -> Origin | None:
    """The origin the lean client can POST ``url`` to, or ``None`` when httpx must: not
    plain ``http://``, a proxy applies, credentials in the URL, characters that need
    percent-encoding (httpx encodes them), or headers that set the framing."""
    try:
        parts = urlsplit(url)
        port = parts.port if parts.port is not None else 80
    except ValueError:
        return None  # httpx reports the bad URL at the first request, as it always has
    host = parts.hostname
    if (
        parts.scheme.lower() != "http"
        or not host
        or parts.username is not None
        or not _URI_CHARS.issuperset(url)
        or not _no_proxy_for(parts)
        or any(name.lower() in _FRAMING for name in headers)
    ):
        return None
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sent = dict(headers)
    if not any(name.lower() == "user-agent" for name in sent):
        sent["User-Agent"] = user_agent()
    try:
        return Origin.build(host, port, target, url, sent)
    except ValueError:  # a header that cannot go out as it is: httpx says why
        return None


@lru_cache(maxsize=1)
def user_agent() -> str:
    """``a2m-python/<version>``, the ``User-Agent`` the client sends."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"a2m-python/{version('a2m-client')}"
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "a2m-python"


def _limits(max_connections: int) -> httpx.Limits:
    """The pool limits of an httpx client the transport owns: the lean path's."""
    check_max_connections(max_connections)
    return httpx.Limits(
        max_connections=max_connections,
        max_keepalive_connections=min(MAX_IDLE, max_connections),
    )


PoolT = TypeVar("PoolT", SyncPool, AsyncPool)
ClientT = TypeVar("ClientT", httpx.Client, httpx.AsyncClient)


class _HTTPParts(Generic[PoolT, ClientT]):
    """What both HTTP transports hold: the URL and headers, the lean pool when the URL
    takes that path, and the httpx client (injected, or made at first need)."""

    _pool_type: type[PoolT]
    _client_type: type[ClientT]

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: ClientT | None = None,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.url = check_url(url)
        self._headers = _headers(token, headers)
        self._owns_client = http_client is None
        self._client: ClientT | None = http_client
        self._limits = _limits(max_connections)  # checked here, whichever path is taken
        origin = _lean_origin(url, self._headers) if http_client is None else None
        self._pool: PoolT | None = (
            self._pool_type(origin, max_connections) if origin is not None else None
        )
        self._lock = threading.Lock()

    def _httpx(self) -> ClientT:
        with self._lock:
            if self._client is None:
                self._client = self._client_type(
                    headers={"User-Agent": user_agent()}, limits=self._limits
                )
            return self._client

    def _release(self) -> ClientT | None:
        """Close the lean pool; the httpx client to close, if this transport made one."""
        if self._pool is not None:
            self._pool.close()
        if not self._owns_client:
            return None
        with self._lock:
            client, self._client = self._client, None
            self._owns_client = client is None
        return client


class HTTPTransport(_HTTPParts[SyncPool, httpx.Client], Transport):
    """Synchronous JSON-RPC over HTTP; thread-safe, pooling keep-alive connections, at most
    ``max_connections`` open at once (a call finding them all busy waits for one, within
    its timeout). An injected ``http_client`` keeps its own limits."""

    _pool_type = SyncPool
    _client_type = httpx.Client

    def handle_request(self, request: dict[str, Any], *, timeout: float | None) -> dict[str, Any]:
        """POST ``request`` and return the JSON-RPC response object."""
        method = request.get("method")
        content = encode_message(request)
        pool = self._pool
        if pool is not None and not _httpx_forced():
            reply = pool.request(content, timeout, method)
            return _response_object(
                reply.status, reply.reason, reply.headers, reply.body, method, self.url
            )
        client = self._client or self._httpx()
        try:
            response = client.post(
                self.url, content=content, headers=self._headers, timeout=timeout
            )
        except (httpx.TransportError, httpx.DecodingError) as exc:
            _raise_transport(exc, method, self.url)
        return _httpx_response(response, method)

    def close(self) -> None:
        """Close the connections, and the httpx client unless it was injected."""
        client = self._release()
        if client is not None:
            client.close()


class AsyncHTTPTransport(_HTTPParts[AsyncPool, httpx.AsyncClient], AsyncTransport):
    """Asynchronous JSON-RPC over HTTP; task-safe, pooling keep-alive connections, at most
    ``max_connections`` open at once (a call finding them all busy waits for one, within
    its timeout). An injected ``http_client`` keeps its own limits. Under an async library
    other than asyncio (trio, through anyio) calls go through httpx."""

    _pool_type = AsyncPool
    _client_type = httpx.AsyncClient

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        super().__init__(
            url,
            token=token,
            headers=headers,
            http_client=http_client,
            max_connections=max_connections,
        )
        # An httpx pool belongs to the loop it was opened on: one per loop when it is ours.
        self._loop_clients = LoopClients(self._new_client, http_client)

    def _new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(headers={"User-Agent": user_agent()}, limits=self._limits)

    async def handle_async_request(
        self, request: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        """POST ``request`` and return the JSON-RPC response object."""
        method = request.get("method")
        content = encode_message(request)
        pool = self._pool
        if pool is not None and not _httpx_forced() and _on_asyncio():
            reply = await pool.request(content, timeout, method)
            return _response_object(
                reply.status, reply.reason, reply.headers, reply.body, method, self.url
            )
        client = await self._loop_clients.get(method)
        try:
            response = await client.post(
                self.url, content=content, headers=self._headers, timeout=timeout
            )
        except (httpx.TransportError, httpx.DecodingError) as exc:
            _raise_transport(exc, method, self.url)
        return _httpx_response(response, method)

    async def aclose(self) -> None:
        """Close the connections, and the httpx client unless it was injected."""
        self._release()
        await self._loop_clients.aclose()


class LoopClients:
    """The httpx client of each event loop: one made per loop (closed when its loop ends,
    or by :meth:`aclose` from it), or the one injected, which serves only the loop it is
    first used on: its pool belongs to that loop, so another loop gets a typed refusal
    rather than a hang or a bare ``RuntimeError``."""

    def __init__(
        self, factory: Callable[[], httpx.AsyncClient], injected: httpx.AsyncClient | None
    ) -> None:
        self._injected = injected
        self._injected_loop: Any = None
        self._lock = threading.Lock()
        self._own = PerLoop(factory, _aclose)

    async def get(self, method: str | None) -> httpx.AsyncClient:
        """The client to send with from the running loop."""
        if self._injected is None:
            return await self._own.aget()
        loop = current_loop(method=method)
        with self._lock:
            if self._injected_loop is None:
                self._injected_loop = loop
            home = self._injected_loop
        if loop is not home:
            raise A2MEventLoopError(
                "the injected http_client belongs to the event loop it was first used on, "
                "and this call runs on another (nothing was sent); leave http_client out so "
                "the client keeps a pool per loop, or make one client per loop",
                method=method,
            )
        return self._injected

    async def aclose(self) -> None:
        """Close this loop's own client; the other loops' close as their loops end. An
        injected client is never closed."""
        await self._own.aclose_current()


async def _aclose(client: httpx.AsyncClient) -> None:
    await client.aclose()


def _on_asyncio() -> bool:
    """Whether this task runs on an asyncio loop the lean client can wait on."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another async library (trio): httpx speaks it through anyio
        return False
    return async_supported(loop)
