"""§7 errors and §8 message framing on every binding: every code a client can provoke, in
the circumstances the spec names; the two it cannot provoke are checked at their source."""

from __future__ import annotations

import json
from typing import Any

import pytest
from spec_support import Peer, rpc_error, timeline_ids, uid, validate_response

from a2m_server.dispatch import handle_message
from a2m_server.errors import ProtocolError

# --- -32700 PARSE_ERROR ------------------------------------------------------------------------


@pytest.mark.spec("7")
@pytest.mark.parametrize(
    "text",
    [
        '{"jsonrpc": "2.0", "id": 1, "method": ',
        "{not json}",
        '{"jsonrpc":"2.0","id":1,"method":"memory/recall","params":{"min_score":NaN}}',
        '{"jsonrpc":"2.0","id":1,"method":"memory/recall","params":{"min_score":Infinity}}',
        "{'single': 'quotes'}",
        '{"jsonrpc":"2.0","id":1,"method":"memory/describe"} trailing',
        b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}',
    ],
    ids=["truncated", "bare-words", "nan", "infinity", "single-quotes", "trailing", "bad-utf8"],
)
def test_7_malformed_json_is_32700_with_a_null_id(peer: Peer, text: str | bytes) -> None:
    response = peer.raw(text)
    assert response is not None
    assert response["error"]["code"] == -32700
    assert response["id"] is None


# --- -32600 INVALID_REQUEST -----------------------------------------------------------------------


@pytest.mark.spec("8")
def test_8_a_batch_is_refused_with_32600_and_nothing_in_it_runs(peer: Peer) -> None:
    """§8: A2M does not use batches; a server MUST refuse an array with -32600."""
    tag = uid("tag")
    write = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "memory/remember",
        "params": {"records": [{"content": "in a batch", "metadata": {"tag": tag}}]},
    }
    for batch in ([write], [write, {**write, "id": 8}], []):
        response = peer.raw(batch)
        assert response is not None
        assert response["error"]["code"] == -32600
        assert response["id"] is None
    assert timeline_ids(peer, tag=tag) == []


@pytest.mark.spec("7")
@pytest.mark.parametrize(
    "message",
    [
        42,
        "a string",
        None,
        True,
        {},
        {"id": 1, "method": "memory/describe"},
        {"jsonrpc": "1.0", "id": 1, "method": "memory/describe"},
        {"jsonrpc": 2.0, "id": 1, "method": "memory/describe"},
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": 1, "method": None},
        {"jsonrpc": "2.0", "id": {"x": 1}, "method": "memory/describe"},
        {"jsonrpc": "2.0", "id": [1], "method": "memory/describe"},
        {"jsonrpc": "2.0", "id": True, "method": "memory/describe"},
    ],
    ids=[
        "number",
        "string",
        "null",
        "bool",
        "empty-object",
        "no-jsonrpc",
        "jsonrpc-1.0",
        "jsonrpc-number",
        "no-method",
        "method-number",
        "method-null",
        "id-object",
        "id-array",
        "id-bool",
    ],
)
def test_7_not_a_request_object_is_32600(peer: Peer, message: Any) -> None:
    response = peer.raw(json.dumps(message))
    assert response is not None
    assert response["error"]["code"] == -32600


# --- -32601 METHOD_NOT_FOUND ---------------------------------------------------------------------


@pytest.mark.spec("7")
@pytest.mark.parametrize(
    "method",
    ["memory/frobnicate", "memory/", "tools/list", "", "MEMORY/DESCRIBE", "memory/describe/"],
)
def test_7_a_method_that_is_not_an_a2m_method_is_32601(peer: Peer, method: str) -> None:
    assert rpc_error(peer, method, {}).code == -32601


# --- -32602 INVALID_PARAMS -------------------------------------------------------------------------

WRONG_TYPES: list[tuple[str, dict[str, Any], str]] = [
    ("memory/remember", {"records": {"content": "x"}}, "records"),
    ("memory/remember", {"records": [{"content": 5}]}, "content"),
    ("memory/remember", {"records": [{"content": "x", "role": 5}]}, "role"),
    ("memory/remember", {"records": [{"content": "x", "group": ["g"]}]}, "group"),
    ("memory/remember", {"records": [{"content": "x", "salience": "high"}]}, "salience"),
    ("memory/remember", {"records": [{"content": "x", "session": 7}]}, "session"),
    ("memory/remember", {"records": [{"content": "x", "uri": 7}]}, "uri"),
    ("memory/recall", {"query": 5}, "query"),
    ("memory/recall", {"limit": "ten"}, "limit"),
    ("memory/recall", {"min_score": "high"}, "min_score"),
    ("memory/recall", {"where": "role=user"}, "where"),
    ("memory/recall", {"key_prefix": 5}, "key_prefix"),
    ("memory/recall", {"embeddings": "yes"}, "embeddings"),
    ("memory/timeline", {"limit": -1}, "limit"),
    ("memory/forget", {"ids": "abc"}, "ids"),
    ("memory/forget", {"ids": [1, 2]}, "ids"),
    ("memory/promote", {"ids": ["x"], "tier": 5}, "tier"),
    ("memory/reinforce", {"ids": ["x"], "amount": "lots"}, "amount"),
    ("memory/fetch", {"key": 5}, "key"),
    ("memory/session/close", {"session": 5}, "session"),
    ("memory/events", {"cursor": 5}, "cursor"),
    ("memory/events", {"limit": "all"}, "limit"),
    ("memory/events", {"kinds": "written"}, "kinds"),
    ("memory/summarize", {"ids": ["x"], "limit": "two"}, "limit"),
    ("memory/describe", {"protocol": 0.1}, "protocol"),
]


@pytest.mark.spec("7")
@pytest.mark.parametrize(
    ("method", "params", "field"), WRONG_TYPES, ids=[f"{m}-{f}" for m, _, f in WRONG_TYPES]
)
def test_7_a_wrong_type_is_32602_naming_the_field(
    peer: Peer, method: str, params: dict[str, Any], field: str
) -> None:
    failure = rpc_error(peer, method, params)
    assert failure.code == -32602
    assert field in failure.message, f"the message should name {field!r}: {failure.message!r}"


@pytest.mark.spec("7")
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("memory/remember", {}),
        ("memory/promote", {"tier": "semantic"}),
        ("memory/reinforce", {}),
        ("memory/fetch", {}),
        ("memory/session/close", {}),
    ],
)
def test_7_a_missing_required_param_is_32602(
    peer: Peer, method: str, params: dict[str, Any]
) -> None:
    assert rpc_error(peer, method, params).code == -32602


@pytest.mark.spec("4")
@pytest.mark.parametrize("params", [[], ["x"], "text", 5])
def test_4_params_that_are_not_an_object_are_refused(peer: Peer, params: Any) -> None:
    """§4: params are passed by name; by-position MAY be accepted, anything else is not a
    set of named parameters."""
    response = peer.raw({"jsonrpc": "2.0", "id": 3, "method": "memory/describe", "params": params})
    assert response is not None
    if "error" in response:
        assert response["error"]["code"] in (-32602, -32600)


@pytest.mark.spec("4")
def test_4_params_may_be_omitted_or_null_when_nothing_is_required(peer: Peer) -> None:
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "memory/describe"},
        {"jsonrpc": "2.0", "id": 2, "method": "memory/describe", "params": None},
    ):
        response = peer.raw(message)
        assert response is not None
        assert response["result"]["protocol"] == "a2m/0.1"


# --- -32002 UNKNOWN_TIER -----------------------------------------------------------------------------


@pytest.mark.spec("7")
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("memory/remember", {"records": [{"content": "x", "tier": "nowhere"}]}),
        ("memory/recall", {"tier": "nowhere"}),
        ("memory/timeline", {"tier": "nowhere"}),
        ("memory/forget", {"tier": "nowhere"}),
        ("memory/promote", {"ids": ["x"], "tier": "nowhere"}),
        ("memory/summarize", {"tier": "nowhere"}),
        ("memory/summarize", {"ids": ["x"], "into": "nowhere"}),
    ],
    ids=["remember", "recall", "timeline", "forget", "promote", "summarize-tier", "summarize-into"],
)
def test_7_an_unknown_tier_is_32002(peer: Peer, method: str, params: dict[str, Any]) -> None:
    """§7 (and §8.3: over HTTP it is 200 with the error object, never 404: the HTTP peer
    accepts nothing but 200 or 202)."""
    assert rpc_error(peer, method, params).code == -32002


# --- codes a client cannot provoke -------------------------------------------------------------


@pytest.mark.spec("7")
def test_7_internal_error_32603_is_what_a_server_fault_becomes() -> None:
    """-32603 cannot be provoked by a well-behaved client against a healthy server; its
    code path is the dispatcher turning any unexpected exception into INTERNAL_ERROR."""

    def broken(method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("simulated fault")

    response = handle_message({"jsonrpc": "2.0", "id": 9, "method": "memory/recall"}, broken)
    assert response is not None
    validate_response(response)
    assert response["id"] == 9
    assert response["error"]["code"] == -32603
    assert "simulated fault" not in response["error"]["message"]  # no internals leak
    assert handle_message({"jsonrpc": "2.0", "method": "memory/recall"}, broken) is None


@pytest.mark.spec("7")
def test_7_unknown_record_32001_is_never_needed_by_this_server() -> None:
    """-32001 is for an operation that cannot ignore a missing id; every A2M 0.1 method of
    this server ignores missing ids (forget, promote, reinforce, summarize count them
    out; fetch answers null), so no client can provoke it. Its path is the generic one:
    a ProtocolError carrying the code reaches the wire intact."""

    def refuses(method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise ProtocolError(-32001, "no such record", {"id": "x"})

    response = handle_message({"jsonrpc": "2.0", "id": "r", "method": "memory/x"}, refuses)
    assert response is not None
    validate_response(response)
    assert response["error"] == {"code": -32001, "message": "no such record", "data": {"id": "x"}}


# --- §8 framing ------------------------------------------------------------------------------------


@pytest.mark.spec("8")
def test_8_a_notification_gets_no_response_but_is_carried_out(peer: Peer) -> None:
    tag = uid("tag")
    note = {
        "jsonrpc": "2.0",
        "method": "memory/remember",
        "params": {"records": [{"content": "sent as a notification", "metadata": {"tag": tag}}]},
    }
    assert peer.raw(note) is None
    assert len(timeline_ids(peer, tag=tag)) == 1
    # A failing notification is still not answered.
    assert peer.raw({"jsonrpc": "2.0", "method": "memory/fetch", "params": {}}) is None
    assert peer.raw({"jsonrpc": "2.0", "method": "memory/no-such-method"}) is None


@pytest.mark.spec("8")
@pytest.mark.parametrize("request_id", ["abc", "", 0, -5, 2**53, 1.5, None], ids=repr)
def test_8_the_response_carries_the_request_id(peer: Peer, request_id: Any) -> None:
    response = peer.raw({"jsonrpc": "2.0", "id": request_id, "method": "memory/describe"})
    assert response is not None
    assert response["id"] == request_id
    assert type(response["id"]) is type(request_id)
    assert "result" in response


@pytest.mark.spec("8")
def test_8_a_response_sent_to_the_server_is_not_answered(peer: Peer) -> None:
    """Servers do not initiate requests, so a client never sends a response: one that
    arrives anyway gets no reply (and certainly no request back)."""
    assert peer.raw({"jsonrpc": "2.0", "id": 5, "result": {}}) is None
    assert peer.raw({"jsonrpc": "2.0", "id": 6, "error": {"code": 1, "message": "x"}}) is None
    assert peer.describe()["protocol"] == "a2m/0.1"
