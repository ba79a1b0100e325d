"""The OpenAI-compatible endpoint embedder against a fake ``/v1/embeddings`` on loopback:
one request per write batch carrying the model, the inputs and the key; and the faults
(down, slow, wrong width, an HTTP error, not JSON) failing the write with a typed error
naming the embedder, nothing written — or, with ``embed_failures = "lexical"``, the
records stored without vectors and back-filled once the endpoint answers again."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import embed_support
import pytest

from a2m_server import A2MServer, ServerConfig
from a2m_server.embedders import EmbedderError, service
from a2m_server.embedders.endpoint import EndpointEmbedder
from a2m_server.errors import ProtocolError
from a2m_types import ErrorCode

MODEL = "fake-embed-8"


class FakeEndpoint:
    """A loopback ``POST /v1/embeddings`` answering ``mode``: ok, slow, narrow (5-d
    vectors), error (HTTP 500), garbage (not JSON)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[tuple[dict[str, Any], str | None]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.requests.append((body, self.headers.get("Authorization")))
                if self.path != "/v1/embeddings":
                    self._answer(404, b"{}")
                    return
                if endpoint.mode == "slow":
                    time.sleep(1.0)
                if endpoint.mode == "error":
                    self._answer(500, b'{"error": "overloaded"}')
                    return
                if endpoint.mode == "garbage":
                    self._answer(200, b"<html>")
                    return
                width = 5 if endpoint.mode == "narrow" else 8
                data = [
                    {"object": "embedding", "index": i, "embedding": embed_support.vector(t, width)}
                    for i, t in enumerate(body["input"])
                ]
                data.reverse()  # the index orders them, not their place
                self._answer(200, json.dumps({"data": data, "model": body["model"]}).encode())

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEndpoint]:
    fake = FakeEndpoint()
    monkeypatch.setenv("A2M_EMBED_URL", fake.url)
    monkeypatch.setenv("A2M_EMBED_MODEL", MODEL)
    monkeypatch.setenv("A2M_EMBED_API_KEY", "sk-test")
    monkeypatch.setenv("A2M_EMBED_DIMENSIONS", "8")
    monkeypatch.setenv("A2M_EMBED_TIMEOUT", "0.3")
    monkeypatch.setattr(service, "_RETRY_S", 0.05)
    try:
        yield fake
    finally:
        fake.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_one_request_per_batch_with_model_inputs_and_key(endpoint: FakeEndpoint) -> None:
    with A2MServer(ServerConfig(embedder="endpoint")) as server:
        peer = server.connect()
        described = peer.call("memory/describe")["embeddings"]
        assert (described["model"], described["dimensions"]) == (MODEL, 8)
        texts = ["rain on monday", "pasta for dinner", "the tax invoice"]
        peer.call("memory/remember", {"records": [{"content": t} for t in texts]})
        assert endpoint.requests == [({"model": MODEL, "input": texts}, "Bearer sk-test")]
        found = peer.call("memory/recall", {"query": "storm", "embeddings": True})["records"]
    assert found[0]["content"] == "rain on monday"  # by meaning: no word in common
    assert found[0]["embedding"] == pytest.approx(embed_support.vector("rain on monday"))
    assert endpoint.requests[-1][0]["input"] == ["storm"]


def test_the_width_is_learned_from_the_first_answer_when_not_configured(
    endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("A2M_EMBED_DIMENSIONS")
    embedder = EndpointEmbedder.from_environment()
    assert embedder.dimensions is None
    assert len(embedder.embed(["a"])[0]) == 8
    assert embedder.dimensions == 8
    endpoint.mode = "narrow"
    with pytest.raises(EmbedderError, match="5 dimensions; model 'fake-embed-8' makes 8"):
        embedder.embed(["b"])


def test_missing_settings_are_named() -> None:
    with pytest.raises(ValueError, match="A2M_EMBED_URL and A2M_EMBED_MODEL"):
        EndpointEmbedder.from_environment({"A2M_EMBED_URL": "http://127.0.0.1:1/v1"})
    with pytest.raises(ValueError, match="http"):
        EndpointEmbedder("ftp://host/v1", "m")


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("down", "is unreachable"),
        ("slow", "did not answer within 0.3 s"),
        ("narrow", "5 dimensions"),
        ("error", "HTTP 500"),
        ("garbage", "not JSON"),
    ],
)
def test_a_fault_fails_the_write_naming_the_embedder_and_writes_nothing(
    endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch, mode: str, reason: str
) -> None:
    if mode == "down":
        monkeypatch.setenv("A2M_EMBED_URL", f"http://127.0.0.1:{closed_port()}/v1")
    with A2MServer(ServerConfig(embedder="endpoint")) as server:
        peer = server.connect()
        if mode != "down":
            peer.call("memory/remember", {"records": [{"content": "kept"}]})
        endpoint.mode = mode
        started = time.monotonic()
        with pytest.raises(ProtocolError) as caught:
            peer.call("memory/remember", {"records": [{"content": "one"}, {"content": "two"}]})
        assert time.monotonic() - started < 5
        assert caught.value.code == ErrorCode.INTERNAL_ERROR
        assert "embedder 'endpoint'" in caught.value.message
        assert reason in caught.value.message
        assert caught.value.data["embedder"] == "endpoint"
        assert caught.value.data["model"] == MODEL
        left = peer.call("memory/recall", {"limit": 10})["records"]
    assert [r["content"] for r in left] == (["kept"] if mode != "down" else [])


def test_lexical_failures_store_without_vectors_then_back_fill(endpoint: FakeEndpoint) -> None:
    with A2MServer(ServerConfig(embedder="endpoint", embed_failures="lexical")) as server:
        peer = server.connect()
        endpoint.mode = "error"
        peer.call("memory/remember", {"records": [{"content": "storm over the hills"}]})
        found = peer.call("memory/recall", {"query": "storm", "embeddings": True})["records"]
        assert [r.get("embedding") for r in found] == [None]
        endpoint.mode = "ok"
        deadline = time.monotonic() + 20
        while True:
            found = peer.call("memory/recall", {"query": "storm", "embeddings": True})["records"]
            if found[0].get("embedding") is not None or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    assert found[0]["embedding"] == pytest.approx(embed_support.vector("storm over the hills"))
