"""``WS /a2m/v1/{namespace}/subscribe?pattern=glob``: write and delete messages for the
entries of one namespace whose keys match, whoever wrote or removed them."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from rest_support import Rest, rpc, uid
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from a2m_server import A2MServer


def _ws_url(url: str, namespace: str, pattern: str | None = None) -> str:
    address = url.replace("http://", "ws://") + f"a2m/v1/{namespace}/subscribe"
    return address if pattern is None else f"{address}?pattern={pattern}"


@pytest.fixture
def subscribe(url: str) -> Iterator[Any]:
    with contextlib.ExitStack() as stack:

        def open_(namespace: str, pattern: str | None = None, **kwargs: Any) -> ClientConnection:
            address = _ws_url(url, namespace, pattern)
            return stack.enter_context(connect(address, open_timeout=10, **kwargs))

        yield open_


def _next(ws: ClientConnection, timeout: float = 5.0) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(ws.recv(timeout=timeout))
    return message


def _quiet(ws: ClientConnection, seconds: float = 0.4) -> None:
    with pytest.raises(TimeoutError):
        ws.recv(timeout=seconds)


def test_writes_and_deletes_matching_the_pattern(rest: Rest, subscribe: Any) -> None:
    ns = uid("sub")
    ws = subscribe(ns, "user/*")
    rest.write(ns, "other/x", "semantic", "not this key")
    rest.write(ns, "user/goal/deep", "semantic", "one segment too many")
    rest.write(f"{ns}/child", "user/goal", "semantic", "another namespace")
    written = rest.write(ns, "user/goal", "semantic", "v1", meta={"tags": ["t"]})
    message = _next(ws)
    assert message == {"event": "write", "entry": written}
    replaced = rest.write(ns, "user/goal", "procedural", "v2")
    assert _next(ws) == {"event": "write", "entry": replaced}
    assert rest.delete(ns, "user/goal").status_code == 204
    assert _next(ws) == {"event": "delete", "entry": replaced}
    _quiet(ws)


def test_without_a_pattern_every_key_of_the_namespace(rest: Rest, subscribe: Any) -> None:
    ns = uid("all")
    ws = subscribe(ns)
    rest.write(f"{ns}/child", "k", "semantic", "elsewhere")
    first = rest.write(ns, "a", "semantic", "v")
    second = rest.write(ns, "b/c/d", "semantic", "v")
    assert [_next(ws)["entry"]["key"] for _ in range(2)] == [first["key"], second["key"]]
    _quiet(ws)


def test_entries_that_existed_before_connecting_are_announced_when_deleted(
    rest: Rest, subscribe: Any
) -> None:
    ns = uid("before")
    old = rest.write(ns, "k1", "semantic", "v")
    rest.write(ns, "k2", "semantic", "v", meta={"tags": ["drop"]})
    ws = subscribe(ns, "k*")
    _quiet(ws)  # nothing changed since the connection opened
    response = rest.request("DELETE", f"{ns}/entries", params={"tag": "drop"})
    assert response.headers["x-deleted-count"] == "1"
    message = _next(ws)
    assert (message["event"], message["entry"]["key"]) == ("delete", "k2")
    assert rest.delete(ns, "k1").status_code == 204
    assert _next(ws) == {"event": "delete", "entry": old}


def test_json_rpc_writes_and_forgets_are_seen(rest: Rest, url: str, subscribe: Any) -> None:
    ns = uid("rpc")
    ws = subscribe(ns, "*")
    (record_id,) = rpc(url, "memory/remember", {"records": [{"content": "hi", "key": f"{ns}/k"}]})[
        "ids"
    ]
    message = _next(ws)
    assert message["event"] == "write"
    assert (message["entry"]["id"], message["entry"]["value"]) == (record_id, "hi")
    rpc(url, "memory/forget", {"key_prefix": ns})
    assert _next(ws) == {"event": "delete", "entry": message["entry"]}


def test_expiry_is_a_delete(rest: Rest, subscribe: Any) -> None:
    ns = uid("ttl")
    ws = subscribe(ns)
    written = rest.write(ns, "brief", "working", "v", meta={"ttl_s": 1})
    assert _next(ws)["event"] == "write"
    started = time.monotonic()
    assert _next(ws, timeout=5) == {"event": "delete", "entry": written}
    assert time.monotonic() - started < 3


def test_a_bad_namespace_or_pattern_is_refused_before_accepting(url: str) -> None:
    with pytest.raises(InvalidStatus) as refused, connect(_ws_url(url, "Bad"), open_timeout=10):
        pass
    assert refused.value.response.status_code == 422
    assert json.loads(refused.value.response.body or b"{}")["code"] == "INVALID_NAMESPACE"
    entries = url.replace("http://", "ws://") + "a2m/v1/ns/entries"
    with pytest.raises(InvalidStatus) as not_found, connect(entries, open_timeout=10):
        pass
    assert not_found.value.response.status_code == 404
    with pytest.raises(InvalidStatus) as too_long, connect(_ws_url(url, "ns", "x" * 600)):
        pass
    assert too_long.value.response.status_code == 400


def test_the_client_closing_ends_the_subscription(
    rest: Rest, server: A2MServer, subscribe: Any
) -> None:
    ns = uid("close")
    ws = subscribe(ns)
    started = time.monotonic()
    ws.close()
    assert time.monotonic() - started < 2
    # The server keeps serving, and later subscribers still hear everything.
    again = subscribe(ns)
    entry = rest.write(ns, "k", "semantic", "v")
    assert _next(again) == {"event": "write", "entry": entry}
