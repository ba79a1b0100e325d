"""§8.1 in-process, §8.2 stdio and §8.3 HTTP: what each binding must do beyond carrying
JSON-RPC (which every other ``test_spec_*`` module already checks on all three)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from spec_support import (
    HttpPeer,
    InProcessPeer,
    Peer,
    PeerFactory,
    StdioPeer,
    uid,
    validate_response,
    validate_result,
)

from a2m_server import A2MServer

ALLOWED_ORIGIN = "https://app.example"
BODY_LIMIT = 64 * 1024
DESCRIBE = b'{"jsonrpc":"2.0","id":1,"method":"memory/describe","params":{}}'


# --- §8.1 in-process --------------------------------------------------------------------------


@pytest.mark.spec("8.1")
def test_8_1_in_process_round_trips_through_json() -> None:
    """§8.1: the in-process binding serialises to JSON and back, so it refuses what a
    remote peer could never send and returns only JSON values."""
    with A2MServer() as server:
        connection = server.connect()
        response = connection.handle_object(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "memory/recall",
                "params": {"min_score": float("nan")},
            }
        )
        assert response is not None
        assert response["error"]["code"] == -32700
        text = connection.handle(DESCRIBE)
        assert text is not None
        assert json.loads(text)["result"]["protocol"] == "a2m/0.1"
        connection.close()


@pytest.mark.spec("8.1")
def test_8_1_in_process_notifications_reach_the_callback_as_json(make_peer: PeerFactory) -> None:
    peer = make_peer("in-process")
    assert isinstance(peer, InProcessPeer)
    peer.call("memory/events/subscribe")
    (record_id,) = peer.remember({"content": "pushed"})
    (note,) = peer.notifications()  # validated against the event schema on arrival
    assert note["params"]["id"] == record_id
    assert json.loads(json.dumps(note)) == note


# --- §8.2 stdio ---------------------------------------------------------------------------------


@pytest.mark.spec("8.2")
def test_8_2_closing_stdin_terminates_the_server_cleanly(make_peer: PeerFactory) -> None:
    peer = make_peer("stdio")
    assert isinstance(peer, StdioPeer)
    peer.remember({"content": "something to flush"})
    peer.call("memory/events/subscribe")
    assert peer.close_stdin() == 0
    assert not peer.violations


@pytest.mark.spec("8.2")
def test_8_2_stdout_carries_only_json_rpc_and_logs_go_to_stderr(make_peer: PeerFactory) -> None:
    """Even at debug logging, stdout holds one JSON-RPC message per line and nothing
    else; the log lines are on stderr."""
    peer = make_peer("stdio", cli_args=("--log-level", "debug"))
    assert isinstance(peer, StdioPeer)
    peer.call("memory/events/subscribe")
    peer.remember({"content": "vector one", "embedding": [0.1, 0.2]}, {"content": "two"})
    peer.recall(embedding=[0.1, 0.2], query="vector")
    peer.raw(b"this line is not JSON")
    peer.raw(b"\xff\xfe\x00 not utf-8")
    peer.call("memory/consolidate")
    peer.close_stdin()
    assert not peer.violations, peer.violations
    assert peer.lines, "no output at all"
    for line in peer.lines:
        assert line.endswith(b"\n")
        assert b"\n" not in line[:-1]
        message = json.loads(line.decode("utf-8"))
        assert message["jsonrpc"] == "2.0"
        if "id" in message:
            validate_response(message)
    assert peer.stderr.strip(), "debug logging should have written to stderr"


@pytest.mark.spec("8.2")
def test_8_2_a_message_never_contains_an_unescaped_newline(make_peer: PeerFactory) -> None:
    peer = make_peer("stdio")
    assert isinstance(peer, StdioPeer)
    tag = uid("tag")
    awkward = "a\nb\r\nc\rd\u2028e\u2029f\u0085g\x0bh\x0ci\u0000j"
    peer.remember({"content": awkward, "metadata": {"tag": tag, awkward: awkward}})
    (record,) = peer.timeline(where={"tag": tag})
    assert record["content"] == awkward
    assert record["metadata"][awkward] == awkward
    answers = [json.loads(line) for line in peer.lines]
    assert len(answers) == len(peer.lines) == 2


@pytest.mark.spec("8.2")
def test_8_2_notifications_interleave_with_responses_matched_by_id(make_peer: PeerFactory) -> None:
    peer = make_peer("stdio")
    assert isinstance(peer, StdioPeer)
    peer.call("memory/events/subscribe")
    ids = peer.remember(*({"content": f"n{i}"} for i in range(3)))
    notes = peer.notifications()
    assert [n["params"]["id"] for n in notes] == ids
    kinds = ["note" if "id" not in json.loads(line) else "response" for line in peer.lines]
    assert kinds == ["response", "note", "note", "note", "response"]


# --- §8.3 HTTP ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http(module_peer_factory: PeerFactory) -> HttpPeer:
    peer = module_peer_factory("http", allowed_origins=(ALLOWED_ORIGIN,), max_body_bytes=BODY_LIMIT)
    assert isinstance(peer, HttpPeer)
    return peer


def _post(peer: HttpPeer, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(
        peer.url, content=body, headers={"Content-Type": "application/json", **headers}, timeout=30
    )


@pytest.mark.spec("8.3")
def test_8_3_only_the_loopback_interface_is_bound(http: HttpPeer) -> None:
    assert http.url.startswith("http://127.0.0.1:")


@pytest.mark.spec("8.3")
def test_8_3_a_request_is_answered_200_with_a_json_body(http: HttpPeer) -> None:
    response = _post(http, DESCRIBE)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    validate_response(response.json(), "memory/describe")


@pytest.mark.spec("8.3")
def test_8_3_a_protocol_error_is_200_with_an_error_object(http: HttpPeer) -> None:
    body = b'{"jsonrpc":"2.0","id":2,"method":"memory/promote","params":{"ids":["x"],"tier":"nowhere"}}'
    response = _post(http, body)
    assert response.status_code == 200, "§8.3: UNKNOWN_TIER MUST NOT be HTTP 404"
    assert response.json()["error"]["code"] == -32002


@pytest.mark.spec("8.3")
def test_8_3_a_notification_is_answered_202_with_an_empty_body(http: HttpPeer) -> None:
    tag = uid("tag")
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "memory/remember",
            "params": {"records": [{"content": "fire and forget", "metadata": {"tag": tag}}]},
        }
    ).encode()
    response = _post(http, body)
    assert response.status_code == 202
    assert response.content == b""
    assert len(http.timeline(where={"tag": tag})) == 1


@pytest.mark.spec("8.3")
def test_8_3_get_on_the_endpoint_is_405(http: HttpPeer) -> None:
    assert httpx.get(http.url, timeout=30).status_code == 405


@pytest.mark.spec("8.3")
def test_8_3_a_batch_is_refused_with_32600(http: HttpPeer) -> None:
    response = _post(http, b"[" + DESCRIBE + b"]")
    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32600


@pytest.mark.spec("8.3.1")
@pytest.mark.parametrize(
    "origin", ["https://evil.example", "http://app.example", "https://app.example:8443", "null"]
)
def test_8_3_1_a_request_from_an_origin_not_permitted_is_403(http: HttpPeer, origin: str) -> None:
    tag = uid("tag")
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "memory/remember",
            "params": {"records": [{"content": "csrf", "metadata": {"tag": tag}}]},
        }
    ).encode()
    assert _post(http, body, Origin=origin).status_code == 403
    assert http.timeline(where={"tag": tag}) == []


@pytest.mark.spec("8.3.1")
def test_8_3_1_no_origin_and_a_permitted_origin_are_served(http: HttpPeer) -> None:
    assert _post(http, DESCRIBE).status_code == 200
    response = _post(http, DESCRIBE, Origin=ALLOWED_ORIGIN)
    assert response.status_code == 200
    assert response.json()["result"]["protocol"] == "a2m/0.1"


@pytest.mark.spec("8.3.1")
def test_8_3_1_by_default_no_origin_is_permitted(make_peer: PeerFactory) -> None:
    peer = make_peer("http")
    assert isinstance(peer, HttpPeer)
    assert _post(peer, DESCRIBE, Origin="http://localhost:3000").status_code == 403
    assert _post(peer, DESCRIBE).status_code == 200


@pytest.mark.spec("8.3.2")
@pytest.mark.parametrize("version", ["a2m/0.2", "a2m/1.0", "nonsense"])
def test_8_3_2_an_unspoken_protocol_version_header_is_400_with_32007(
    http: HttpPeer, version: str
) -> None:
    response = _post(http, DESCRIBE, **{"A2M-Protocol-Version": version})
    assert response.status_code == 400
    body: dict[str, Any] = response.json()
    validate_response(body)
    assert body["error"]["code"] == -32007


@pytest.mark.spec("8.3.2")
def test_8_3_2_the_right_or_an_absent_version_header_is_fine(http: HttpPeer) -> None:
    assert _post(http, DESCRIBE, **{"A2M-Protocol-Version": "a2m/0.1"}).status_code == 200
    assert _post(http, DESCRIBE).status_code == 200


@pytest.mark.spec("8.3.3")
def test_8_3_3_the_well_known_profile_is_the_describe_result(http: HttpPeer) -> None:
    response = httpx.get(http.url + ".well-known/a2m-server.json", timeout=30)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    profile = response.json()
    validate_result("memory/describe", profile)
    described = http.describe()
    assert profile["capabilities"] == described["capabilities"]
    assert profile["methods"] == described["methods"]
    assert profile["events"] == {"push": False}


@pytest.mark.spec("8.3")
def test_8_3_a_body_over_the_size_limit_is_refused(http: HttpPeer) -> None:
    tag = uid("tag")
    big = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "memory/remember",
            "params": {"records": [{"content": "x" * BODY_LIMIT, "metadata": {"tag": tag}}]},
        }
    ).encode()
    assert _post(http, big).status_code == 413
    assert http.timeline(where={"tag": tag}) == []
    assert _post(http, DESCRIBE).status_code == 200


@pytest.mark.spec("8.3")
def test_8_3_describe_over_http_never_reports_push(peer: Peer) -> None:
    """On every binding: push is reported true only where a notification can travel."""
    assert peer.describe()["events"]["push"] is (peer.binding != "http")
