"""The HTTP binding (§8.3) against a real uvicorn on an ephemeral loopback port: status
codes, Origin (§8.3.1), bearer auth (§6, §6.1), the version header (§8.3.2), body limits
and the well-known profile (§8.3.3)."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from a2m_server.auth import hash_token
from a2m_server.bindings.http import WELL_KNOWN_PATH, create_app, principal_of
from a2m_server.server import A2MServer
from a2m_testing.servers import serve_http
from a2m_types import PROTOCOL_HEADER, ErrorCode

TOKENS = {"alice-token": "alice", hash_token("bob-token"): "bob"}
ALICE = {"Authorization": "Bearer alice-token"}
ALLOWED = "https://app.example"


def _request(method: str, params: dict[str, Any] | None = None, id: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id is not None:
        message["id"] = id
    return message


# One server per module and store backend: starting and stopping uvicorn dominates the run
# time, and the tests below use content of their own, so sharing the store does not couple
# them. Asking for ``store_backend`` opens it on the backend the test runs on.
@pytest.fixture(scope="module")
def server(store_backend: str) -> Iterator[A2MServer]:
    with A2MServer() as server:
        yield server


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def url(server: A2MServer) -> Iterator[str]:
    with serve_http(server, allowed_origins=[ALLOWED]) as url:
        yield url


@pytest.fixture(scope="module")
def auth_url(server: A2MServer) -> Iterator[str]:
    with serve_http(server, tokens=TOKENS, allowed_origins=[ALLOWED]) as url:
        yield url


def _result(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert "error" not in body, body
    return body["result"]


def _error(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert "result" not in body, body
    error: dict[str, Any] = body["error"]
    return error


# --- JSON-RPC over POST (§8.3) -----------------------------------------------------------


@pytest.mark.spec("8.3")
def test_post_round_trip(client: httpx.Client, url: str) -> None:
    response = client.post(url, json=_request("memory/describe", id="req-7"))
    assert response.json()["id"] == "req-7"
    assert _result(response)["protocol"] == "a2m/0.1"

    ids = _result(
        client.post(
            url, json=_request("memory/remember", {"records": [{"content": "the sky is blue"}]})
        )
    )["ids"]
    recalled = _result(client.post(url, json=_request("memory/recall", {"query": "sky"})))
    assert [record["id"] for record in recalled["records"]] == ids


@pytest.mark.spec("8.3")
def test_notification_is_accepted_with_an_empty_body_and_still_runs(
    client: httpx.Client, url: str
) -> None:
    params = {"records": [{"content": "sent as a notification", "key": "note/1"}]}
    response = client.post(url, json=_request("memory/remember", params, id=None))
    assert response.status_code == 202
    assert response.content == b""
    fetched = _result(client.post(url, json=_request("memory/fetch", {"key": "note/1"})))
    assert fetched["record"]["content"] == "sent as a notification"


@pytest.mark.spec("8.3")
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_other_methods_on_the_endpoint_are_405(client: httpx.Client, url: str, method: str) -> None:
    response = client.request(method, url)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"


@pytest.mark.spec("8")
def test_array_is_refused_as_invalid_request(client: httpx.Client, url: str) -> None:
    batch = [_request("memory/describe", id=1), _request("memory/describe", id=2)]
    error = _error(client.post(url, json=batch))
    assert error["code"] == ErrorCode.INVALID_REQUEST


@pytest.mark.spec("7")
@pytest.mark.parametrize(
    "body", [b"{", b"", b"\xff\xfe", b'{"jsonrpc": "2.0", "id": 1, "method": NaN}']
)
def test_malformed_json_is_a_parse_error_with_200(
    client: httpx.Client, url: str, body: bytes
) -> None:
    error = _error(client.post(url, content=body, headers={"Content-Type": "application/json"}))
    assert error["code"] == ErrorCode.PARSE_ERROR


@pytest.mark.spec("8.3")
def test_protocol_errors_travel_as_200_not_as_http_statuses(client: httpx.Client, url: str) -> None:
    error = _error(
        client.post(url, json=_request("memory/promote", {"ids": ["x"], "tier": "nowhere"}))
    )
    assert error["code"] in (ErrorCode.UNKNOWN_TIER, ErrorCode.UNKNOWN_RECORD)
    assert (
        _error(client.post(url, json=_request("memory/nope")))["code"] == ErrorCode.METHOD_NOT_FOUND
    )


def test_lone_surrogate_in_a_request_gets_valid_utf8_back(client: httpx.Client, url: str) -> None:
    body = b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "memory/nope"}'
    response = client.post(url, content=body)
    assert response.status_code == 200
    decoded = json.loads(response.content.decode("utf-8"))
    assert decoded["id"] == "\ud800"


@settings(max_examples=60, deadline=None)
@given(body=st.binary(max_size=300) | st.text(max_size=200).map(str.encode))
def test_any_body_gets_a_json_rpc_answer_or_202(url: str, body: bytes) -> None:
    response = httpx.post(url, content=body, timeout=30)
    if response.status_code == 202:
        assert response.content == b""
        return
    assert response.status_code == 200
    answer = response.json()
    assert answer["jsonrpc"] == "2.0"
    assert ("result" in answer) != ("error" in answer)


def test_unknown_path_is_404(client: httpx.Client, url: str) -> None:
    assert client.post(url + "elsewhere", json=_request("memory/describe")).status_code == 404


def test_concurrent_requests_are_all_answered(client: httpx.Client, url: str) -> None:
    def remember(n: int) -> list[str]:
        with httpx.Client(timeout=30) as own:
            params = {"records": [{"content": f"parallel {n}"}]}
            ids: list[str] = _result(own.post(url, json=_request("memory/remember", params, id=n)))[
                "ids"
            ]
            return ids

    with ThreadPoolExecutor(8) as pool:
        written = [record_id for ids in pool.map(remember, range(40)) for record_id in ids]
    assert len(set(written)) == 40
    timeline = _result(client.post(url, json=_request("memory/timeline", {"limit": 1000})))
    assert {record["id"] for record in timeline["records"]} >= set(written)


def test_closed_server_answers_503_not_a_traceback(client: httpx.Client) -> None:
    server = A2MServer()
    with serve_http(server) as url:
        server.close()
        response = client.post(url, json=_request("memory/describe"))
        assert response.status_code == 503
        assert response.json() == {"error": "the server is shutting down"}


# --- Origin (§8.3.1) --------------------------------------------------------------------


@pytest.mark.spec("8.3.1")
@pytest.mark.parametrize(
    "origin", ["https://evil.example", "null", "https://app.example.evil", "http://app.example"]
)
def test_disallowed_origin_is_403(client: httpx.Client, url: str, origin: str) -> None:
    response = client.post(url, json=_request("memory/describe"), headers={"Origin": origin})
    assert response.status_code == 403
    assert response.json() == {"error": "origin not allowed"}
    assert "access-control-allow-origin" not in response.headers


@pytest.mark.spec("8.3.1")
def test_no_origin_is_allowed_by_default(server: A2MServer, client: httpx.Client) -> None:
    with serve_http(server) as url:
        assert client.post(url, json=_request("memory/describe")).status_code == 200
        blocked = client.post(
            url, json=_request("memory/describe"), headers={"Origin": "http://localhost:3000"}
        )
        assert blocked.status_code == 403


@pytest.mark.spec("8.3.1")
def test_allowed_origin_gets_cors_headers(client: httpx.Client, url: str) -> None:
    response = client.post(url, json=_request("memory/describe"), headers={"Origin": ALLOWED})
    assert _result(response)["protocol"] == "a2m/0.1"
    assert response.headers["access-control-allow-origin"] == ALLOWED
    assert "Origin" in response.headers["vary"]


@pytest.mark.spec("8.3.1")
def test_request_without_origin_is_unaffected(client: httpx.Client, url: str) -> None:
    response = client.post(url, json=_request("memory/describe"))
    assert _result(response)["protocol"] == "a2m/0.1"
    assert "access-control-allow-origin" not in response.headers


@pytest.mark.spec("8.3.1")
def test_preflight_for_an_allowed_origin(client: httpx.Client, auth_url: str) -> None:
    # A browser sends no credentials on a preflight, so it must pass without a token.
    response = client.options(
        auth_url,
        headers={
            "Origin": ALLOWED,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, authorization, a2m-protocol-version",
        },
    )
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == ALLOWED
    assert set(response.headers["access-control-allow-methods"].split(", ")) >= {"POST", "GET"}
    allowed_headers = {
        h.lower() for h in response.headers["access-control-allow-headers"].split(", ")
    }
    assert allowed_headers >= {"content-type", "authorization", "a2m-protocol-version"}


@pytest.mark.spec("8.3.1")
def test_preflight_for_a_disallowed_origin_is_403(client: httpx.Client, url: str) -> None:
    response = client.options(
        url, headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    )
    assert response.status_code == 403


@pytest.mark.spec("8.3.1")
def test_origin_is_checked_before_credentials(client: httpx.Client, auth_url: str) -> None:
    response = client.post(
        auth_url, json=_request("memory/describe"), headers={"Origin": "https://evil.example"}
    )
    assert response.status_code == 403


def test_create_app_refuses_a_malformed_origin(server: A2MServer) -> None:
    with pytest.raises(ValueError, match="not a browser origin"):
        create_app(server, allowed_origins=["app.example/path"])


# --- Protocol version header (§8.3.2) -----------------------------------------------------


@pytest.mark.spec("8.3.2")
@pytest.mark.parametrize("headers", [{}, {PROTOCOL_HEADER: "a2m/0.1"}])
def test_compatible_or_absent_version_header_is_fine(
    client: httpx.Client, url: str, headers: dict[str, str]
) -> None:
    assert _result(client.post(url, json=_request("memory/describe"), headers=headers))


@pytest.mark.spec("8.3.2")
@pytest.mark.parametrize("version", ["a2m/0.2", "a2m/1.0", "mcp/2025-06-18", ""])
def test_incompatible_version_header_is_400_with_protocol_not_supported(
    client: httpx.Client, url: str, version: str
) -> None:
    response = client.post(
        url, json=_request("memory/describe"), headers={PROTOCOL_HEADER: version}
    )
    assert response.status_code == 400
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["error"]["code"] == ErrorCode.PROTOCOL_NOT_SUPPORTED
    assert body["error"]["data"] == {"supported": ["a2m/0.1"]}


@pytest.mark.spec("8.3.2")
def test_credentials_are_checked_before_the_version(client: httpx.Client, auth_url: str) -> None:
    response = client.post(
        auth_url, json=_request("memory/describe"), headers={PROTOCOL_HEADER: "a2m/9.9"}
    )
    assert response.status_code == 401


# --- Body size limit ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_url(server: A2MServer) -> Iterator[str]:
    with serve_http(server, max_body_bytes=1024) as url:
        yield url


@pytest.mark.parametrize("size", [1025, 2048, 1024 * 1024])
def test_body_over_the_limit_by_content_length_is_413(
    client: httpx.Client, small_url: str, size: int
) -> None:
    response = client.post(small_url, content=b" " * size)
    assert response.status_code == 413
    assert "1024" in response.json()["error"]
    # The refusal leaves the connection usable for the next request.
    assert _result(client.post(small_url, json=_request("memory/describe")))


@pytest.mark.parametrize("chunks", [2, 1000])
def test_chunked_body_over_the_limit_is_413(
    client: httpx.Client, small_url: str, chunks: int
) -> None:
    response = client.post(small_url, content=iter([b" " * 600] * chunks))
    assert response.status_code == 413
    assert _result(client.post(small_url, json=_request("memory/describe")))


def test_body_at_the_limit_is_accepted(client: httpx.Client, small_url: str) -> None:
    body = json.dumps(_request("memory/describe")).encode()
    padded = body + b" " * (1024 - len(body))
    assert _result(client.post(small_url, content=padded))
    assert _result(client.post(small_url, content=iter([body[:10], body[10:]])))


def test_version_is_checked_before_the_size(client: httpx.Client, small_url: str) -> None:
    response = client.post(small_url, content=b" " * 2048, headers={PROTOCOL_HEADER: "a2m/0.2"})
    assert response.status_code == 400


def test_create_app_refuses_a_zero_limit(server: A2MServer) -> None:
    with pytest.raises(ValueError, match="max_body_bytes"):
        create_app(server, max_body_bytes=0)


# --- Well-known profile (§8.3.3) and push (§4.13) ---------------------------------------


@pytest.mark.spec("8.3.3")
def test_well_known_document_is_the_describe_result(client: httpx.Client, url: str) -> None:
    document = client.get(url + WELL_KNOWN_PATH.lstrip("/"))
    assert document.status_code == 200
    assert document.headers["content-type"] == "application/json"
    assert document.json() == _result(client.post(url, json=_request("memory/describe")))


@pytest.mark.spec("8.3.3")
def test_well_known_document_follows_the_principal(client: httpx.Client, auth_url: str) -> None:
    document = client.get(auth_url + WELL_KNOWN_PATH.lstrip("/"), headers=ALICE)
    assert document.status_code == 200
    assert "scopes" in document.json()["capabilities"]
    assert document.json() == _result(
        client.post(auth_url, json=_request("memory/describe"), headers=ALICE)
    )


@pytest.mark.spec("4.13")
@pytest.mark.parametrize("authenticated", [False, True])
def test_push_is_never_offered_over_http(
    client: httpx.Client, url: str, auth_url: str, authenticated: bool
) -> None:
    target, headers = (auth_url, ALICE) if authenticated else (url, {})
    describe = _result(client.post(target, json=_request("memory/describe"), headers=headers))
    assert describe["events"]["push"] is False
    error = _error(
        client.post(target, json=_request("memory/events/subscribe", {}), headers=headers)
    )
    assert error["code"] == ErrorCode.CAPABILITY_NOT_SUPPORTED
    polled = _result(client.post(target, json=_request("memory/events", {}), headers=headers))
    assert "events" in polled


# --- The seam for more routes --------------------------------------------------------------


def test_added_routes_pass_the_same_gate(server: A2MServer, client: httpx.Client) -> None:
    async def whoami(request: Request) -> Response:
        return JSONResponse(
            {"principal": principal_of(request), "body": (await request.body()).decode()}
        )

    app = create_app(
        server,
        tokens=TOKENS,
        allowed_origins=[ALLOWED],
        max_body_bytes=64,
        routes=[Route("/a2m/v1/whoami", whoami, methods=["POST"])],
    )
    with serve_http(app) as url:
        route = url + "a2m/v1/whoami"
        assert client.post(route, content=b"hi").status_code == 401
        assert (
            client.post(
                route, content=b"hi", headers={**ALICE, "Origin": "https://evil.example"}
            ).status_code
            == 403
        )
        assert client.post(route, content=b"x" * 65, headers=ALICE).status_code == 413
        response = client.post(route, content=b"hi", headers={**ALICE, "Origin": ALLOWED})
        assert response.status_code == 200
        assert response.json() == {"principal": "alice", "body": "hi"}
        assert response.headers["access-control-allow-origin"] == ALLOWED


def test_serve_http_refuses_app_options_for_an_app(server: A2MServer) -> None:
    app = create_app(server)
    with pytest.raises(TypeError, match="tokens"), serve_http(app, tokens=TOKENS):
        pass


@pytest.mark.parametrize(
    ("host", "answered"),
    [
        ("attacker.example", False),
        ("a2m", False),
        ("127.0.0.1", True),
        ("localhost", True),
        ("[::1]", True),
    ],
)
def test_a_loopback_server_without_tokens_answers_no_rebound_name(
    url: str, auth_url: str, client: httpx.Client, host: str, answered: bool
) -> None:
    """A page of another site whose name is rebound to 127.0.0.1 sends a simple GET with
    no Origin: without tokens, a server listening on loopback answers it only at an IP
    address or localhost (§8.3.1's concern: "read back everything"). With tokens the
    name does not matter: a browser holds no token to send."""
    port = httpx.URL(url).port
    for path in ("/a2m/v1/some/namespace/entries", WELL_KNOWN_PATH):
        response = client.get(f"{url.rstrip('/')}{path}", headers={"Host": f"{host}:{port}"})
        assert (response.status_code != 403) is answered, (path, response.text)
        if not answered:
            assert "IP address or localhost" in response.text
    rpc = client.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "memory/describe"},
        headers={"Host": f"{host}:{port}"},
    )
    assert (rpc.status_code == 200) is answered
    authed = client.post(
        auth_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "memory/describe"},
        headers={
            "Host": f"{host}:{httpx.URL(auth_url).port}",
            "Authorization": "Bearer alice-token",
        },
    )
    assert authed.status_code == 200


def test_a_request_head_past_its_bound_is_431_and_the_server_keeps_answering(
    url: str, client: httpx.Client
) -> None:
    """A header that never ends once held the event loop ever longer and grew the process
    without bound, before any authentication: past 128 KiB it is refused."""
    parsed = httpx.URL(url)
    with socket.create_connection((parsed.host, parsed.port), timeout=30) as sock:
        sock.sendall(f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{parsed.port}\r\nX-Big: ".encode())
        answer = b""
        try:
            for _ in range(64):  # up to 4 MiB, far past the bound
                sock.sendall(b"a" * 65536)
        except OSError:
            pass  # refused and closed meanwhile
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                answer += chunk
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]
    fine = client.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "memory/describe"})
    assert fine.status_code == 200
