"""The server README: over HTTP a call's parsing, dispatch, store work and encoding run on
a worker thread, and the event loop only reads requests, applies the gate and writes
answers. So a write waiting on a file store's writer holds up no one else: reads,
describe, REST requests and the gate's refusals on other connections are answered
meanwhile, and the write lands once the writer is free."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2m_server import A2MServer
from a2m_testing.servers import serve_http

WAIT_S = 20.0


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[A2MServer, str]]:
    # A file store: its readers have connections of their own, so only the write waits.
    with A2MServer(db=tmp_path / "served.db") as server, serve_http(server) as url:
        yield server, url


def _call(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    body: dict[str, Any] = httpx.post(url, json=message, timeout=WAIT_S).json()
    assert "result" in body, body
    result: dict[str, Any] = body["result"]
    return result


def test_a_write_waiting_on_the_store_holds_up_no_other_request(
    served: tuple[A2MServer, str],
) -> None:
    server, url = served
    _call(url, "memory/remember", {"records": [{"content": "already here", "key": "k/one"}]})
    lock: Any = server.store._write_lock  # type: ignore[attr-defined]
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            held.set()
            release.wait(WAIT_S)

    holder = threading.Thread(target=hold)
    holder.start()
    written: dict[str, Any] = {}
    writer = threading.Thread(
        target=lambda: written.update(
            _call(url, "memory/remember", {"records": [{"content": "waited", "key": "k/two"}]})
        )
    )
    try:
        assert held.wait(WAIT_S)
        writer.start()
        # While that write waits for the store, other connections are served.
        assert _call(url, "memory/describe", {})["protocol"] == "a2m/0.1"
        assert _call(url, "memory/fetch", {"key": "k/one"})["record"]["content"] == "already here"
        assert httpx.get(url + "a2m/v1/memory:describe", timeout=WAIT_S).status_code == 200
        refused = httpx.post(url, json={}, headers={"A2M-Protocol-Version": "a2m/9"})
        assert refused.status_code == 400  # the gate, on the event loop
        assert writer.is_alive(), "the write should still be waiting for the store"
        assert written == {}
    finally:
        release.set()
        holder.join(WAIT_S)
    writer.join(WAIT_S)
    assert len(written["ids"]) == 1
    assert _call(url, "memory/fetch", {"key": "k/two"})["record"]["content"] == "waited"
