"""The HTTP gate in front of REST, WebSocket included: Origin (403), bearer auth (401), the
version header (400) and the body limit (413), each with the REST error body; and with
auth, the principal's view of entries, exactly as over JSON-RPC."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from rest_support import Rest, assert_error, entry_body, rpc, uid, unchanged
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from a2m_server import A2MServer
from a2m_testing.servers import serve_http
from a2m_types import PROTOCOL_HEADER

TOKENS = {"alice-token": "alice", "bob-token": "bob"}
ALICE = {"Authorization": "Bearer alice-token"}
BOB = {"Authorization": "Bearer bob-token"}
ALLOWED = "https://app.example"


@pytest.fixture(scope="module")
def auth_url(server: A2MServer) -> Iterator[str]:
    with serve_http(server, tokens=TOKENS, allowed_origins=[ALLOWED], max_body_bytes=2048) as url:
        yield url


@pytest.fixture
def alice(auth_url: str) -> Iterator[Rest]:
    client = Rest(auth_url, ALICE)
    yield client
    client.close()


@pytest.fixture
def bob(auth_url: str) -> Iterator[Rest]:
    client = Rest(auth_url, BOB)
    yield client
    client.close()


# --- the gate ----------------------------------------------------------------------------


def test_no_or_a_wrong_token_is_401_with_the_rest_body(auth_url: str, server: A2MServer) -> None:
    with unchanged(server):
        for headers in ({}, {"Authorization": "Bearer nope"}):
            response = httpx.post(
                auth_url + "a2m/v1/ns/entries",
                json=entry_body("k", "semantic", "v"),
                headers=headers,
            )
            assert_error(response, 401, "UNAUTHORIZED")
            assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_refused_origin_is_403_before_credentials(auth_url: str) -> None:
    response = httpx.get(auth_url + "a2m/v1/ns/entries", headers={"Origin": "https://evil.example"})
    assert_error(response, 403, "ORIGIN_NOT_ALLOWED")


def test_an_allowed_origin_gets_cors_headers_and_the_deleted_count(alice: Rest) -> None:
    ns = uid("cors")
    alice.write(ns, "k", "semantic", "v")
    response = alice.request("DELETE", f"{ns}/entries", headers={"Origin": ALLOWED})
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == ALLOWED
    assert response.headers["access-control-expose-headers"] == "X-Deleted-Count"
    preflight = httpx.options(
        alice.base + f"{ns}/entries",
        headers={"Origin": ALLOWED, "Access-Control-Request-Method": "DELETE"},
    )
    assert preflight.status_code == 204
    assert "DELETE" in preflight.headers["access-control-allow-methods"]


def test_an_incompatible_version_header_is_400(alice: Rest) -> None:
    response = alice.request("GET", "ns/entries", headers={PROTOCOL_HEADER: "a2m/9.9"})
    body = assert_error(response, 400, "PROTOCOL_NOT_SUPPORTED")
    assert body["a2m_code"] == -32007
    assert body["data"] == {"supported": ["a2m/0.1"]}
    assert (
        alice.request("GET", "ns/entries", headers={PROTOCOL_HEADER: "a2m/0.1"}).status_code == 200
    )


def test_a_body_over_the_limit_is_413_and_writes_nothing(alice: Rest, server: A2MServer) -> None:
    with unchanged(server):
        response = alice.put(uid("big"), entry_body("k", "semantic", "x" * 4096))
        assert_error(response, 413, "BODY_TOO_LARGE")


def test_other_paths_keep_their_own_refusal_bodies(auth_url: str) -> None:
    assert httpx.post(auth_url, json={}).json() == {"error": "missing or invalid bearer token"}


def test_websockets_pass_the_same_gate(auth_url: str) -> None:
    address = auth_url.replace("http://", "ws://") + "a2m/v1/ns/subscribe"
    for headers, status, code in [
        ({}, 401, "UNAUTHORIZED"),
        ({**ALICE, "Origin": "https://evil.example"}, 403, "ORIGIN_NOT_ALLOWED"),
        ({**ALICE, PROTOCOL_HEADER: "a2m/9.9"}, 400, "PROTOCOL_NOT_SUPPORTED"),
    ]:
        with pytest.raises(InvalidStatus) as refused, connect(address, additional_headers=headers):
            pass
        assert refused.value.response.status_code == status
        assert json.loads(refused.value.response.body or b"{}")["code"] == code
    with connect(address, additional_headers={**ALICE, "Origin": ALLOWED}, open_timeout=10) as ws:
        ws.ping().wait(5)


# --- the principal's view -------------------------------------------------------------------


def test_entries_belong_to_the_principal(alice: Rest, bob: Rest, auth_url: str) -> None:
    ns = uid("owned")
    mine = alice.write(ns, "notes", "working", "alice's")
    assert_error(bob.read(ns, "notes"), 404, "ENTRY_NOT_FOUND")
    assert bob.list(ns).json()["total"] == 0
    assert_error(bob.delete(ns, "notes"), 404, "ENTRY_NOT_FOUND")
    # Keys are unique per owner (§3.6): bob's write makes his own entry.
    response = bob.put(ns, entry_body("notes", "working", "bob's"))
    assert response.status_code == 201
    assert response.json()["id"] != mine["id"]
    assert alice.read(ns, "notes").json() == mine
    record = rpc(auth_url, "memory/fetch", {"key": f"{ns}/notes"}, headers=ALICE)["record"]
    assert (record["id"], record["owner"]) == (mine["id"], "alice")


def test_shared_tiers_are_readable_but_not_deletable_by_others(alice: Rest, bob: Rest) -> None:
    ns = uid("shared")
    fact = alice.write(ns, "fact", "semantic", "shared knowledge")
    assert bob.read(ns, "fact").json() == fact
    assert [e["key"] for e in bob.list(ns).json()["entries"]] == ["fact"]
    assert_error(bob.delete(ns, "fact"), 403, "SCOPE_DENIED")
    response = bob.request("DELETE", f"{ns}/entries")
    assert response.headers["x-deleted-count"] == "0"
    assert alice.read(ns, "fact").status_code == 200


def test_acting_as_another_owner_is_403_scope_denied(alice: Rest) -> None:
    body = assert_error(alice.method("recall", {"owner": "bob"}), 403, "SCOPE_DENIED")
    assert body["a2m_code"] == -32005


def test_the_subscription_sees_what_the_principal_may_read(
    alice: Rest, bob: Rest, auth_url: str
) -> None:
    ns = uid("watch")
    address = auth_url.replace("http://", "ws://") + f"a2m/v1/{ns}/subscribe"
    with connect(address, additional_headers=ALICE, open_timeout=10) as ws:
        bob.write(ns, "private", "working", "bob only")
        shared = bob.write(ns, "public", "semantic", "everyone")
        assert json.loads(ws.recv(timeout=5)) == {"event": "write", "entry": shared}
        with pytest.raises(TimeoutError):
            ws.recv(timeout=0.4)
