"""Bounded, readable records, on both stores and every binding: ``metadata`` nests at most
``MAX_JSON_DEPTH`` levels and holds at most ``max_metadata_bytes`` of JSON, refused with
``INVALID_PARAMS`` naming the field before anything is written; a body nested ten
thousand levels is a JSON-RPC or REST error, never a 500; and no stored record can make
a read fail (one stored by an earlier release, nested too deep to serialise, is left out
of the answer and logged)."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from spec_support import BINDINGS, PeerFactory, RpcFailure

from a2m_server import A2MServer, ServerConfig
from a2m_server.bindings.http import DEFAULT_MAX_BODY_BYTES
from a2m_server.config import LimitsConfig
from a2m_server.store import NewRecord
from a2m_testing.servers import serve_http
from a2m_types import new_id
from a2m_types.json_values import MAX_JSON_DEPTH

INVALID_PARAMS = -32602


def nested(depth: int, leaf: Any = 1, *, arrays: bool = False) -> Any:
    """A value of exactly ``depth`` levels of objects (or arrays) around ``leaf``."""
    value = leaf
    for _ in range(depth):
        value = [value] if arrays else {"a": value}
    return value


def nested_text(depth: int, *, arrays: bool = False) -> str:
    """:func:`nested` as JSON text, built without recursion."""
    if arrays:
        return "[" * depth + "1" + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def by_id(peer: Any, record_id: str) -> dict[str, Any]:
    (record,) = [r for r in peer.call("memory/timeline", {"limit": 1000})["records"]
                 if r["id"] == record_id]  # fmt: skip
    return record


def count(peer: Any) -> int:
    return len(peer.call("memory/timeline", {"limit": 1000})["records"])


@pytest.mark.parametrize("binding", BINDINGS)
def test_metadata_depth_is_bounded_on_every_binding(
    binding: str, make_peer: PeerFactory, store_backend: str
) -> None:
    peer = make_peer(binding)
    # metadata itself is level 1: its deepest object here is level MAX_JSON_DEPTH.
    deepest = {"m": nested(MAX_JSON_DEPTH - 1)}
    (kept,) = peer.remember({"content": "deep enough", "metadata": deepest})
    assert by_id(peer, kept)["metadata"] == deepest
    before = count(peer)
    for too_deep in ({"m": nested(MAX_JSON_DEPTH)}, {"m": nested(MAX_JSON_DEPTH, arrays=True)}):
        batch = [{"content": "fine"}, {"content": "too deep", "metadata": too_deep}]
        with pytest.raises(RpcFailure) as failure:
            peer.call("memory/remember", {"records": batch})
        assert failure.value.code == INVALID_PARAMS
        assert "records.1.metadata.m" in failure.value.message
        assert f"deeper than {MAX_JSON_DEPTH} levels" in failure.value.message
        assert failure.value.data["field"].startswith("records.1.metadata.m")
    # A failed batch writes nothing, not even its valid records.
    assert count(peer) == before


@pytest.mark.parametrize("binding", BINDINGS)
def test_metadata_size_is_bounded_and_declared(
    binding: str, make_peer: PeerFactory, store_backend: str
) -> None:
    config = ServerConfig(limits=LimitsConfig(max_metadata_bytes=1000))
    peer = make_peer(binding, config)
    limits = peer.call("memory/describe")["limits"]
    assert limits["max_metadata_bytes"] == 1000
    assert limits["max_metadata_depth"] == MAX_JSON_DEPTH
    fits = {"text": "x" * (1000 - len('{"text":""}'))}
    peer.remember({"content": "at the limit", "metadata": fits})
    # Counted in UTF-8 bytes, not characters: 250 four-byte characters are 1000 bytes.
    over = {"text": "\U0001f600" * 250}
    with pytest.raises(RpcFailure) as failure:
        peer.call("memory/remember", {"records": [{"content": "over", "metadata": over}]})
    assert failure.value.code == INVALID_PARAMS
    assert failure.value.data["field"] == "records.0.metadata"
    assert failure.value.data["limit"] == "max_metadata_bytes"
    assert "max_metadata_bytes is 1000" in failure.value.message
    assert count(peer) == 1


def test_values_json_cannot_carry_are_refused_in_process(store_backend: str) -> None:
    """In process, a caller's Python values reach the server unparsed: a set, bytes or a
    lone surrogate is refused naming its path, never rewritten or a bare exception."""
    with A2MServer() as server:
        connection = server.connect()
        for bad, path in (
            ({"s": {1, 2}}, "records.0.metadata.s"),
            ({"b": b"raw"}, "records.0.metadata.b"),
            ({"t": "\ud800"}, "records.0.metadata.t"),
            ({"n": float("nan")}, "records.0.metadata.n"),
        ):
            answer = connection.handle_object(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "memory/remember",
                    "params": {"records": [{"content": "x", "metadata": bad}]},
                }
            )
            assert answer is not None
            assert answer["error"]["code"] == INVALID_PARAMS, answer
            assert path in answer["error"]["message"], answer
        deep = {"jsonrpc": "2.0", "id": 2, "method": "memory/remember",
                "params": {"records": [{"content": "x", "metadata": nested(10_000)}]}}  # fmt: skip
        answer = connection.handle_object(deep)
        assert answer is not None
        assert answer["error"]["code"] == INVALID_PARAMS, answer
        assert "records.0.metadata.a.a" in answer["error"]["message"]
        assert connection.call("memory/timeline")["records"] == []


@pytest.fixture
def http_server(store_backend: str) -> Iterator[tuple[A2MServer, str]]:
    with A2MServer() as server, serve_http(server) as url:
        yield server, url


def rpc_text(url: str, text: str) -> httpx.Response:
    return httpx.post(url, content=text, headers={"content-type": "application/json"}, timeout=60)


def remember_text(metadata_text: str) -> str:
    return (
        '{"jsonrpc":"2.0","id":7,"method":"memory/remember","params":{"records":'
        '[{"content":"hostile deep note","metadata":{"m":' + metadata_text + "}}]}}"
    )


def upsert_text(key: str, value_text: str) -> str:
    return '{"key":"' + key + '","type":"semantic","value":' + value_text + "}"


def assert_reads_answer(url: str, namespace: str) -> None:
    """Every read that could meet a stored record answers 200 with JSON."""
    for method, params in (
        ("memory/timeline", {"limit": 1000}),
        ("memory/recall", {"query": "hostile deep note", "limit": 1000}),
        ("memory/recall", {"limit": 1000}),
    ):
        response = httpx.post(
            url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, timeout=60
        )
        assert response.status_code == 200, response.text[:300]
        assert "result" in response.json(), response.text[:300]
    for path in (f"a2m/v1/{namespace}/entries", f"a2m/v1/{namespace}/entries?recursive=true"):
        response = httpx.get(url + path, timeout=60)
        assert response.status_code == 200, response.text[:300]
        assert response.headers["content-type"] == "application/json"
        response.json()
    response = httpx.post(url + f"a2m/v1/{namespace}/query", json={"query": "hostile"}, timeout=60)
    assert response.status_code == 200, response.text[:300]


# Shallow depths, each side of the limit, then a sample up to 20,000 around the limits of
# the parsers and serialisers (orjson 255 and 1,024, the standard library about 1,000).
DEPTHS = [1, 2, 3, 5, 8, 16, 32, MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH,
          MAX_JSON_DEPTH + 1, 100, 255, 256, 350, 500, 990, 1000, 1025, 2000, 5000, 10_000,
          20_000]  # fmt: skip


def test_hostile_depths_are_refused_or_readable(http_server: tuple[A2MServer, str]) -> None:
    """Metadata and REST values at every sampled depth, objects and arrays, over JSON-RPC
    and REST: each is refused with a JSON error or stored and read back intact, and
    every read afterwards answers."""
    server, url = http_server
    namespace = f"hostile-{new_id()[:8]}"
    for depth in DEPTHS:
        for arrays in (False, True):
            text = nested_text(depth, arrays=arrays)
            response = rpc_text(url, remember_text(text))
            assert response.status_code == 200, (depth, response.text[:300])
            answer = response.json()
            # metadata is level 1 and "m" holds the value: the value's depth + 1 levels.
            if depth + 1 <= MAX_JSON_DEPTH:
                (record_id,) = answer["result"]["ids"]
                assert by_id(server.connect(), record_id)["metadata"] == {"m": json.loads(text)}
            else:
                assert answer["error"]["code"] in (INVALID_PARAMS, -32700), answer
                assert answer["id"] in (7, None)
            key = f"k{depth}{'a' if arrays else 'o'}"
            response = httpx.post(
                url + f"a2m/v1/{namespace}/entries",
                content=upsert_text(key, text),
                headers={"content-type": "application/json"},
                timeout=60,
            )
            assert response.headers["content-type"] == "application/json", response.text[:300]
            if depth + 1 <= MAX_JSON_DEPTH:
                assert response.status_code == 201, (depth, response.text[:300])
                assert response.json()["value"] == json.loads(text)
            else:
                assert response.status_code == 400, (depth, response.text[:300])
                body = response.json()
                assert body["code"] == "INVALID_BODY"
                assert body["message"].startswith(("value", "malformed JSON")), body
        if depth in (MAX_JSON_DEPTH - 1, 350, 2000):
            assert_reads_answer(url, namespace)
    assert_reads_answer(url, namespace)


def test_hostile_sizes_up_to_the_body_limit(http_server: tuple[A2MServer, str]) -> None:
    """Wide metadata up to the HTTP body limit: refused with a JSON error (too big for
    ``max_metadata_bytes`` or the body) or stored and readable."""
    server, url = http_server
    limit = server.protocol.config.limits.max_metadata_bytes
    for size in (1000, limit - 100, limit + 100, DEFAULT_MAX_BODY_BYTES - 200,
                 DEFAULT_MAX_BODY_BYTES + 10):  # fmt: skip
        text = json.dumps(["x" * 90] * (size // 95))
        response = rpc_text(url, remember_text(text))
        assert response.headers["content-type"].startswith("application/json"), response.text
        if response.status_code == 413:
            assert size > DEFAULT_MAX_BODY_BYTES - 1000
            continue
        answer = response.json()
        if len(text) + len('{"m":}') <= limit:
            assert "result" in answer, answer
        else:
            assert answer["error"]["code"] == INVALID_PARAMS
            assert answer["error"]["data"]["limit"] == "max_metadata_bytes"
    assert_reads_answer(url, "sizes")


def _store_unbounded(server: A2MServer, depth: int) -> str:
    """Write a record as a release without the depth limit could: straight to the store."""
    record_id = new_id()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * depth))
    try:
        with server.store.writing() as writer:
            record = NewRecord(
                id=record_id,
                content=f"hostile deep note {depth}",
                created_at=int(time.time() * 1000),
                metadata={"m": nested(depth)},
                key=f"old/deep{depth}",
                tier="semantic",
            )
            writer.insert([record])
    finally:
        sys.setrecursionlimit(limit)
    return record_id


def test_a_stored_record_that_cannot_be_serialised_is_left_out(
    http_server: tuple[A2MServer, str], caplog: pytest.LogCaptureFixture
) -> None:
    """Records an earlier release stored nested deeper than the limit (it parsed and
    dumped up to about 990 levels): every read still answers, with the readable records
    whole, and the ones it cannot serialise left out and logged."""
    server, url = http_server
    fine = server.connect().call(
        "memory/remember", {"records": [{"content": "hostile deep note fine", "key": "old/fine"}]}
    )["ids"][0]
    stored = {depth: _store_unbounded(server, depth) for depth in (300, 600, 990)}
    caplog.set_level(logging.ERROR)
    assert_reads_answer(url, "old")
    timeline = httpx.post(url, timeout=60, json={"jsonrpc": "2.0", "id": 1,
        "method": "memory/timeline", "params": {"limit": 100}}).json()["result"]["records"]  # fmt: skip
    listed = {record["id"]: record for record in timeline}
    assert fine in listed
    for depth, record_id in stored.items():
        # Left out and logged, or there whole: never a record with its metadata changed.
        if record_id in listed:
            assert listed[record_id]["metadata"] == {"m": nested(depth)}
        else:
            assert record_id in caplog.text
    listing = httpx.get(url + "a2m/v1/old/entries", timeout=60).json()
    assert "fine" in [entry["key"] for entry in listing["entries"]]
    # Read by itself, one that cannot be answered is a JSON error, not plain text.
    for depth, record_id in stored.items():
        response = httpx.get(url + f"a2m/v1/old/entries/deep{depth}", timeout=60)
        assert response.headers["content-type"] == "application/json"
        if response.status_code != 200:
            assert response.status_code == 500
            assert record_id in response.json()["message"]
    answer = server.connect().handle_object(
        {"jsonrpc": "2.0", "id": 1, "method": "memory/timeline", "params": {"limit": 100}}
    )
    assert answer is not None
    assert fine in [record["id"] for record in answer["result"]["records"]]


def test_metadata_a_store_cannot_parse_leaves_its_record_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Stored text too deep for any parser here (no release wrote one; a foreign writer
    might): the record reads with unreadable metadata, which no answer carries."""
    from a2m_server.dispatch import encode
    from a2m_server.store import StoredRecord
    from a2m_server.store.base import UNREADABLE_METADATA

    caplog.set_level(logging.ERROR)
    row = (1, "deep-id", "text", 1, 1, None, nested_text(50_000), *([None] * 12))
    record = StoredRecord.from_row(row, None)
    assert record.metadata is UNREADABLE_METADATA
    assert "deep-id" in caplog.text
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"records": [
        {"id": "deep-id", "metadata": record.metadata}, {"id": "ok", "metadata": {}}]}}  # fmt: skip
    assert json.loads(encode(answer))["result"]["records"] == [{"id": "ok", "metadata": {}}]


def test_import_refuses_a_dump_line_nested_too_deep(tmp_path: Path) -> None:
    from a2m_server.store import open_store
    from a2m_server.transfer import DumpError, import_records

    line = {"id": "r1", "content": "x", "created_at": 1, "updated_at": 1,
            "metadata": {"m": nested(MAX_JSON_DEPTH)}}  # fmt: skip
    dump = tmp_path / "dump.jsonl"
    dump.write_text('{"format": "a2m-export/1", "dimensions": null}\n' + json.dumps(line) + "\n")
    store = open_store(tmp_path / "target.db")
    try:
        with dump.open() as source, pytest.raises(DumpError, match=r"line 2: metadata\.m"):
            import_records(store, source)
        with store.reading() as reader:
            assert reader.scan(0, 10) == []
    finally:
        store.close()
