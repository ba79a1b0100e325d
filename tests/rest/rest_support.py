"""Support for the REST binding tests: a thin client for ``/a2m/v1`` over a real uvicorn,
a JSON-RPC helper for cross-binding checks, and the "nothing was written" probe."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import httpx

from a2m_server import A2MServer
from a2m_server.store import RecordFilter

__all__ = [
    "Rest",
    "assert_error",
    "entry_body",
    "eventually",
    "rpc",
    "store_state",
    "uid",
    "unchanged",
]

T = TypeVar("T")


def uid(prefix: str = "t") -> str:
    """A namespace segment (or key) no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


class Rest:
    """``/a2m/v1`` on one server, with optional default headers (a token, an Origin)."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None) -> None:
        self.url = url
        self.base = url + "a2m/v1/"
        self.http = httpx.Client(timeout=30, headers=dict(headers or {}))

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.request(method, self.base + path, **kwargs)

    def put(self, namespace: str, body: Any) -> httpx.Response:
        """Upsert (the draft's POST .../entries)."""
        return self.request("POST", f"{namespace}/entries", json=body)

    def write(
        self, namespace: str, key: str, type_: str, value: Any, **fields: Any
    ) -> dict[str, Any]:
        response = self.put(namespace, entry_body(key, type_, value, **fields))
        assert response.status_code in (200, 201), response.text
        entry: dict[str, Any] = response.json()
        return entry

    def read(self, namespace: str, key: str) -> httpx.Response:
        return self.request("GET", f"{namespace}/entries/{key}")

    def list(self, namespace: str, **params: Any) -> httpx.Response:
        return self.request("GET", f"{namespace}/entries", params=params)

    def query(self, namespace: str, body: Any) -> httpx.Response:
        return self.request("POST", f"{namespace}/query", json=body)

    def delete(self, namespace: str, key: str) -> httpx.Response:
        return self.request("DELETE", f"{namespace}/entries/{key}")

    def method(self, name: str, params: Any = None) -> httpx.Response:
        return self.request("POST", f"memory:{name}", json={} if params is None else params)


def entry_body(key: str, type_: str, value: Any, **fields: Any) -> dict[str, Any]:
    return {"key": key, "type": type_, "value": value, **fields}


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The draft's error body with this status and code."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/json"
    body: dict[str, Any] = response.json()
    assert body["code"] == code, body
    assert isinstance(body["message"], str)
    assert body["message"]
    return body


def rpc(url: str, method: str, params: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
    """One JSON-RPC call over HTTP; the result (asserting there was no error)."""
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": dict(params or {})}
    response = httpx.post(url, json=message, timeout=30, **kwargs)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert "error" not in answer, answer
    return answer["result"]


def store_state(server: A2MServer) -> tuple[int, int]:
    """(event log head, live records): both stay put when nothing is written."""
    with server.store.reading() as reader:
        return reader.event_bounds()[1], reader.count(RecordFilter())


@contextmanager
def unchanged(server: A2MServer) -> Iterator[None]:
    """Assert the block wrote nothing: no event logged, no record added or removed."""
    before = store_state(server)
    yield
    assert store_state(server) == before


def eventually(probe: Callable[[], T | None], timeout: float = 10.0, every: float = 0.05) -> T:
    """Poll ``probe`` until it returns something other than ``None``."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing after {timeout:.0f}s")
        time.sleep(every)
