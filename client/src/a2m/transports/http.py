"""JSON-RPC over HTTP (§8.3): one ``POST`` per call through a pooled httpx client, with the
bearer token and ``A2M-Protocol-Version`` header, and HTTP failures mapped onto the error
tree. An injected ``httpx.Client`` / ``httpx.AsyncClient`` is used as is and never closed."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any, NoReturn

import httpx

from a2m.errors import (
    A2MConnectError,
    A2MConnectionError,
    A2MHTTPStatusError,
    A2MTimeoutError,
    ResponseValidationError,
    error_for_status,
)
from a2m_types import PROTOCOL_HEADER, PROTOCOL_VERSION

from ._base import AsyncTransport, Transport, decode_message, encode_message

__all__ = ["AsyncHTTPTransport", "HTTPTransport"]

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


def _raise_transport(exc: httpx.TransportError, method: str | None, url: str) -> NoReturn:
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
        raise A2MConnectError(f"could not connect to {url}: {exc}", method=method) from exc
    if isinstance(exc, httpx.TimeoutException):
        raise A2MTimeoutError(f"no answer from {url} in time ({exc})", method=method) from exc
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.LocalProtocolError)):
        raise A2MConnectionError(
            f"cannot send to {url}: {exc}", method=method, retryable=False
        ) from exc
    raise A2MConnectionError(f"the connection to {url} failed: {exc}", method=method) from exc


def _response_object(response: httpx.Response, method: str | None) -> dict[str, Any]:
    status = response.status_code
    if status == 200 or (200 < status < 300 and response.content):
        message = decode_message(response.content, method=method)
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
            message = decode_message(response.content, method=method)
        except ResponseValidationError:
            message = None
        if isinstance(message, dict) and isinstance(message.get("error"), dict):
            return message
    raise _status_error(response, method)


def _status_error(response: httpx.Response, method: str | None) -> A2MHTTPStatusError:
    status = response.status_code
    body = response.text[:_BODY_SNIPPET]
    detail: str | None = None
    code: int | None = None
    data: Any = None
    try:
        parsed = response.json()
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
    reason = response.reason_phrase or "error"
    message = f"HTTP {status} {reason} from {response.request.url}"
    if detail:
        message += f": {detail}"
    return error_for_status(status)(
        message,
        status=status,
        body=body,
        retry_after=_retry_after(response.headers.get("retry-after")),
        method=method,
        code=code,
        data=data,
    )


class HTTPTransport(Transport):
    """Synchronous JSON-RPC over HTTP; thread-safe, pooling connections in one httpx client."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.url = url
        self._headers = _headers(token, headers)
        self._owns_client = http_client is None
        self._client = http_client if http_client is not None else httpx.Client()

    def handle_request(self, request: dict[str, Any], *, timeout: float | None) -> dict[str, Any]:
        """POST ``request`` and return the JSON-RPC response object."""
        method = request.get("method")
        try:
            response = self._client.post(
                self.url, content=encode_message(request), headers=self._headers, timeout=timeout
            )
        except httpx.TransportError as exc:
            _raise_transport(exc, method, self.url)
        return _response_object(response, method)

    def close(self) -> None:
        """Close the httpx client, unless it was injected."""
        if self._owns_client:
            self._client.close()


class AsyncHTTPTransport(AsyncTransport):
    """Asynchronous JSON-RPC over HTTP; task-safe, pooling connections in one httpx client."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url
        self._headers = _headers(token, headers)
        self._owns_client = http_client is None
        self._client = http_client if http_client is not None else httpx.AsyncClient()

    async def handle_async_request(
        self, request: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        """POST ``request`` and return the JSON-RPC response object."""
        method = request.get("method")
        try:
            response = await self._client.post(
                self.url, content=encode_message(request), headers=self._headers, timeout=timeout
            )
        except httpx.TransportError as exc:
            _raise_transport(exc, method, self.url)
        return _response_object(response, method)

    async def aclose(self) -> None:
        """Close the httpx client, unless it was injected."""
        if self._owns_client:
            await self._client.aclose()
