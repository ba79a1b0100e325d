"""The respx router: httpx calls answered by an in-process server, for sync and async
clients, answering as the real HTTP binding does."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx

from a2m import A2MClient, AsyncA2MClient, ProtocolNotSupported
from a2m_server.server import A2MServer
from a2m_testing import InProcessHTTP, assert_remembered, route_to_server

URL = "http://a2m.test/"
RPC = {"Content-Type": "application/json"}


def rpc(method: str, params: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}, **extra}


def test_a_sync_client_reaches_the_in_process_server(
    a2m_respx_router: respx.MockRouter, a2m_server: A2MServer
) -> None:
    with A2MClient(URL) as client:
        client.remember({"content": "the user lives in Lisbon", "key": "user/city"})
        assert client.fetch("user/city").record is not None
    assert_remembered(a2m_server, key="user/city", contains="lisbon")
    assert a2m_respx_router.calls.call_count == 3  # describe, remember, fetch


@pytest.mark.anyio
async def test_an_async_client_reaches_the_in_process_server(
    a2m_respx_router: respx.MockRouter, a2m_server: A2MServer
) -> None:
    async with httpx.AsyncClient() as http:
        client = AsyncA2MClient(URL, http_client=http)
        await client.remember({"content": "async over respx", "key": "user/async"})
        assert (await client.recall("respx")).records
        await client.aclose()
    assert_remembered(a2m_server, key="user/async")


@pytest.mark.anyio
async def test_an_async_client_with_its_own_pool(a2m_respx_router: respx.MockRouter) -> None:
    client = AsyncA2MClient(URL)
    try:
        await client.remember("pooled")
    finally:
        await client.aclose()
    assert a2m_respx_router.calls.call_count == 2


def test_plain_httpx_sees_the_bindings_answers(a2m_respx_router: respx.MockRouter) -> None:
    with httpx.Client(base_url=URL) as http:
        described = http.post("/", json=rpc("memory/describe"))
        assert described.status_code == 200
        assert described.json()["result"]["protocol"] == "a2m/0.1"

        notification = {"jsonrpc": "2.0", "method": "memory/describe", "params": {}}
        accepted = http.post("/", json=notification)
        assert (accepted.status_code, accepted.content) == (202, b"")

        refused = http.get("/")
        assert refused.status_code == 405
        assert refused.headers["Allow"] == "POST"

        profile = http.get("/.well-known/a2m-server.json")
        assert profile.status_code == 200
        assert "scopes" not in profile.json()["capabilities"]  # no auth, as over real HTTP

        assert http.get("/elsewhere").status_code == 404
        assert http.post("/", content=b"{not json").json()["error"]["code"] == -32700


def test_a_refused_protocol_version_is_the_bindings_400(
    a2m_respx_router: respx.MockRouter,
) -> None:
    with httpx.Client() as http:
        response = http.post(
            URL, json=rpc("memory/describe"), headers={"A2M-Protocol-Version": "a2m/9.0"}
        )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32007
    refusing = A2MClient(URL, headers={"A2M-Protocol-Version": "a2m/9.0"})
    with refusing, pytest.raises(ProtocolNotSupported):
        refusing.describe()


def test_other_hosts_stay_unmocked(a2m_respx_router: respx.MockRouter) -> None:
    with httpx.Client() as http, pytest.raises(respx.models.AllMockedAssertionError):
        http.get("https://api.example/v1/models")
    a2m_respx_router.get("https://api.example/v1/models").respond(json={"data": []})
    with httpx.Client() as http:
        assert http.get("https://api.example/v1/models").json() == {"data": []}


class TestAnotherURL:
    @pytest.fixture
    def a2m_respx_url(self) -> str:
        return "http://memory.internal:8765/rpc"

    def test_the_url_fixture_moves_the_server(self, a2m_respx_router: respx.MockRouter) -> None:
        with A2MClient("http://memory.internal:8765/rpc") as client:
            client.remember("moved")
        with httpx.Client() as http:
            assert http.get("http://memory.internal:8765/rpc").status_code == 405
            assert http.get("http://memory.internal:8765/").status_code == 404
            with pytest.raises(respx.models.AllMockedAssertionError):
                http.post("http://memory.internal/rpc", json=rpc("memory/describe"))


def test_tokens_authenticate_and_give_an_owner() -> None:
    with A2MServer() as server, respx.mock() as router:
        route_to_server(router, server, URL, tokens={"s3cret": "alice"})
        with httpx.Client() as http:
            anonymous = http.post(URL, json=rpc("memory/describe"))
            assert anonymous.status_code == 401
            assert anonymous.headers["WWW-Authenticate"] == 'Bearer realm="a2m"'
        with A2MClient(URL, token="s3cret") as client:
            assert "scopes" in client.capabilities
            client.remember("alice's note")
            assert client.recall("note").records[0].owner == "alice"


def test_one_router_can_mock_several_servers() -> None:
    with A2MServer() as first, A2MServer() as second, respx.mock() as router:
        route_to_server(router, first, "http://one.test/")
        route_to_server(router, second, "http://two.test/")
        with A2MClient("http://one.test/") as one, A2MClient("http://two.test/") as two:
            one.remember("only in the first")
            assert not two.recall("first").records


def test_the_side_effect_records_requests_and_reports_a_closed_server() -> None:
    server = A2MServer()
    answer = InProcessHTTP(server, URL)
    request = httpx.Request("POST", URL, content=json.dumps(rpc("memory/describe")))
    assert answer(request).status_code == 200
    server.close()
    assert answer(request).status_code == 503
    assert len(answer.requests) == 2


def test_answers_match_the_real_http_binding(a2m_http_url: str) -> None:
    """The same requests, to a real uvicorn server and to a mocked one, get the same status
    and the same JSON body."""
    requests: list[tuple[str, str, Any]] = [
        ("POST", "", rpc("memory/describe")),
        ("POST", "", {"jsonrpc": "2.0", "method": "memory/describe"}),
        ("POST", "", rpc("memory/no-such-method")),
        ("POST", "", rpc("memory/recall", {"limit": "ten"})),
        ("POST", "", "[]"),
        ("POST", "", "{broken"),
        ("GET", "", None),
        ("GET", ".well-known/a2m-server.json", None),
        ("GET", "nowhere", None),
    ]
    with A2MServer() as mocked, respx.mock() as router:
        router.route(host="127.0.0.1").pass_through()
        route_to_server(router, mocked, URL)
        with httpx.Client() as http:
            for method, path, body in requests:
                content = body if isinstance(body, str) else json.dumps(body) if body else None
                real = http.request(method, a2m_http_url + path, content=content, headers=RPC)
                fake = http.request(method, URL + path, content=content, headers=RPC)
                assert fake.status_code == real.status_code, (method, path, body)
                if real.headers.get("content-type", "").startswith("application/json"):
                    assert fake.json() == real.json(), (method, path, body)
