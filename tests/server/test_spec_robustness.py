"""Malformed input never crashes the server, and is never answered with anything but a
JSON-RPC response (§7, §8, issue 2 "never crashes on input"): a hypothesis fuzz of
``Connection.handle``, a corpus of hostile messages on every binding, and the inputs
found to break it (marked as server bugs)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spec_support import (
    METHOD_CAPABILITY,
    SCHEMA,
    Peer,
    PeerFactory,
    StdioPeer,
    rpc_error,
    uid,
    validate_response,
)

from a2m_server import A2MServer, Connection

# --- hypothesis: Connection.handle -----------------------------------------------------------

_PARAM_NAMES = sorted(
    {name for definition in SCHEMA["$defs"].values() for name in definition.get("properties", {})}
)
_RECORD_FIELDS = sorted(SCHEMA["$defs"]["recordInput"]["properties"])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["working", "episodic", "semantic", "a/b", "", "c1.AAAA", "memory/recall"]),
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=10,
)
records = st.lists(
    st.dictionaries(st.sampled_from(_RECORD_FIELDS), json_values, max_size=6)
    | st.fixed_dictionaries({"content": st.text(max_size=20)}),
    max_size=3,
)
params = st.one_of(
    st.dictionaries(
        st.sampled_from(_PARAM_NAMES) | st.text(max_size=6),
        json_values | records,
        max_size=5,
    ),
    json_values,
)
_ABSENT = object()


@st.composite
def requests(draw: st.DrawFn) -> Any:
    message: dict[str, Any] = {}
    for name, strategy in (
        ("jsonrpc", st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2]) | json_values),
        ("id", st.integers() | st.text(max_size=8) | st.none() | json_values),
        ("method", st.sampled_from(sorted(METHOD_CAPABILITY)) | st.text(max_size=12) | json_values),
        ("params", params),
    ):
        if draw(st.booleans()) or name in ("jsonrpc", "method"):
            value = draw(st.just(_ABSENT) | strategy) if name == "jsonrpc" else draw(strategy)
            if value is not _ABSENT:
                message[name] = value
    return message


messages = st.one_of(
    requests().map(lambda m: json.dumps(m)),
    json_values.map(json.dumps),
    st.lists(requests(), max_size=2).map(json.dumps),
    st.text(max_size=80),
    st.binary(max_size=80),
    requests().map(lambda m: json.dumps(m)[: len(json.dumps(m)) // 2]),
)


@pytest.fixture(scope="module")
def fuzzed(store_backend: str) -> Iterator[Connection]:
    # Asking for the backend opens the store on the one this test runs on.
    with A2MServer() as server:
        connection = server.connect(notify=lambda note: None)
        yield connection
        connection.close()


@pytest.mark.spec("7")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=messages)
def test_7_random_input_always_gets_a_json_rpc_response_or_none(
    fuzzed: Connection, message: str | bytes
) -> None:
    answer = fuzzed.handle(message)
    try:
        parsed: Any = json.loads(message)
    except (ValueError, UnicodeDecodeError):
        parsed = _ABSENT
    if answer is None:
        # Only a notification (an object without id), or a response sent to us, goes unanswered.
        assert (isinstance(parsed, dict) and "id" not in parsed) or (
            isinstance(parsed, dict) and not isinstance(parsed.get("method"), str)
        ), message
        return
    response = json.loads(answer)
    validate_response(response)
    if parsed is _ABSENT:
        assert response["error"]["code"] == -32700
    elif isinstance(parsed, list):
        assert response["error"]["code"] == -32600
    # The server is still there.
    assert fuzzed.call("memory/describe")["protocol"] == "a2m/0.1"


# --- a corpus of hostile messages, on every binding -------------------------------------------------

HOSTILE: list[str | bytes] = [
    "",
    " ",
    "\t\r",
    "null",
    "[]",
    "[[]]",
    "{}",
    '"\\ud800"',
    "[" * 5000 + "]" * 5000,
    '{"a":' * 3000 + "1" + "}" * 3000,
    '{"jsonrpc":"2.0","id":1,"method":"memory/recall","params":{"where":'
    + '{"a":' * 200
    + "1"
    + "}" * 200
    + "}}",
    '{"jsonrpc":"2.0","id":1,"method":"memory/remember","params":{"records":[{"content":"'
    + "x" * 200_000
    + '"}]}}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/recall","params":{"query":"'
    + "\\u0000" * 100
    + '"}}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/recall","params":{"query":"AND OR NOT NEAR(\\"x\\") * ^ col:x"}}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/recall","params":{"query":"\\" OR 1=1; DROP TABLE records; --"}}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/timeline","params":{"key_prefix":"%_\\u0000/"}}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/timeline","params":{"where":{"$.x\\"]":1,"a\'b":"c"}}}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/recall","params":{"limit":1e2}}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/recall","params":{"embedding":[1e308,1e308]}}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/recall","params":{"min_score":-1e308}}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/events","params":{"cursor":"c1.' + "A" * 5000 + '"}}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/events","params":{"limit":99999999999999999999999}}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/describe","params":{"protocol":"a2m/99999999999999999999.1"}}',
    '{"jsonrpc":"2.0","id":99999999999999999999999999,"method":"memory/describe"}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/describe","jsonrpc":"2.0"}',
    '{"jsonrpc":"2.0","id":1,"method":"memory/describe","params":{},"extra":[1,2,3]}',
    b"\xef\xbb\xbf" + b'{"jsonrpc":"2.0","id":1,"method":"memory/describe"}',
    b"\x00\x01\x02\x03",
    b"\xc3\x28",
    '{"jsonrpc":"2.0","id":1,"method":"memory/remember","params":{"records":[{"content":"\\u2028\\u2029"}]}}',
]


@pytest.mark.spec("7")
@pytest.mark.parametrize("message", HOSTILE, ids=lambda m: repr(m[:40]))
def test_7_hostile_messages_get_a_response_and_the_server_survives(
    peer: Peer, message: str | bytes
) -> None:
    response = peer.raw(message)  # schema-checked by the peer
    if response is not None:
        assert ("result" in response) != ("error" in response)
    assert peer.describe()["protocol"] == "a2m/0.1"


# --- inputs that break the server (server bugs) -------------------------------------------------------


def _survives(peer: Peer, message: str) -> dict[str, Any] | None:
    """Send ``message``; the server must answer with a JSON-RPC response and stay up."""
    if isinstance(peer, StdioPeer):
        peer.expect_clean_exit = False  # the point of the test is whether it dies
    response = peer.raw(message)
    assert peer.describe()["protocol"] == "a2m/0.1"
    return response


@pytest.mark.spec("8")
def test_8_an_id_that_overflows_a_double_does_not_crash_the_server(
    binding: str, make_peer: PeerFactory
) -> None:
    """``1e400`` is valid JSON grammar; Python parses it as ``inf``, the server echoes it
    as the id, and ``encode(allow_nan=False)`` raises outside dispatch's error handling:
    ``Connection.handle`` raises, the stdio process exits with a traceback, HTTP answers
    500. Expected: a JSON-RPC response (``-32600`` for an unusable id, or the result)."""
    peer = make_peer(binding)
    response = _survives(peer, '{"jsonrpc":"2.0","id":1e400,"method":"memory/describe"}')
    assert response is not None
    assert "result" in response or response["error"]["code"] == -32600


@pytest.mark.spec("7")
def test_7_salience_overflow_never_poisons_the_store(binding: str, make_peer: PeerFactory) -> None:
    """``salience: 1.5e308`` then ``reinforce amount: 1.5e308`` stores ``inf``; from then
    on every read returning that record (timeline, recall, fetch) raises in
    ``Connection.handle``: the stdio server exits, HTTP answers 500, and a file store is
    poisoned for good. Expected: the overflow refused (-32602) or clamped, and reads
    keep working."""
    peer = make_peer(binding)
    record_id = uid("salient")
    peer.remember({"id": record_id, "content": "very salient", "salience": 1.5e308})
    for _ in range(2):
        try:
            peer.call("memory/reinforce", {"ids": [record_id], "amount": 1.5e308})
        except Exception:
            break  # refusing the overflow is a fine answer
    response = _survives(
        peer, json.dumps({"jsonrpc": "2.0", "id": 5, "method": "memory/timeline", "params": {}})
    )
    assert response is not None
    assert "result" in response


@pytest.mark.spec("3.7")
def test_3_7_a_vector_of_infinities_is_refused_or_survives(
    binding: str, make_peer: PeerFactory
) -> None:
    """``embedding: [1e400, 0.5]`` is accepted (``RecordInput.embedding`` allows inf);
    ``memory/fetch`` (or recall/timeline) with ``embeddings: true`` then raises in
    ``Connection.handle``. Expected: -32602 on the write, or reads that still work."""
    peer = make_peer(binding)
    key = f"{uid('inf')}/k"
    write = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "memory/remember",
        "params": {"records": [{"content": "infinite", "key": key, "embedding": [0.5, 0.5]}]},
    }
    text = json.dumps(write).replace("[0.5, 0.5]", "[1e400, 0.5]")
    written = _survives(peer, text)
    assert written is not None
    if "error" in written:
        assert written["error"]["code"] == -32602
        return
    fetch = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "memory/fetch",
        "params": {"key": key, "embeddings": True},
    }
    response = _survives(peer, json.dumps(fetch))
    assert response is not None
    assert "result" in response


@pytest.mark.spec("3.1")
def test_3_1_metadata_the_server_cannot_store_is_32602(peer: Peer) -> None:
    """§3.1: "A server that cannot store arbitrary JSON metadata MUST NOT silently discard
    it; it MUST fail the write with INVALID_PARAMS." ``{"x": 1e400}`` cannot be stored
    (``dump_json``, like ``json.dumps(allow_nan=False)``, raises) and comes back as -32603."""
    text = (
        '{"jsonrpc":"2.0","id":1,"method":"memory/remember",'
        '"params":{"records":[{"content":"huge","metadata":{"x":1e400}}]}}'
    )
    response = peer.raw(text)
    assert response is not None
    assert response["error"]["code"] == -32602


@pytest.mark.spec("3.1")
@pytest.mark.parametrize(
    "field", ["metadata-value", "metadata-key", "content", "role", "group", "session"]
)
def test_3_1_a_lone_surrogate_is_refused_as_invalid_params_or_round_trips(
    peer: Peer, field: str
) -> None:
    """``"\\ud800"`` is a legal JSON escape but not encodable UTF-8; SQLite's binding
    raises UnicodeEncodeError and the write is answered -32603 INTERNAL_ERROR. §3.1
    (metadata) and §7 (malformed params are -32602, -32603 is a server fault) expect
    INVALID_PARAMS, or the value stored and returned unchanged."""
    tag = uid("tag")
    record: dict[str, Any] = {"content": "surrogate", "metadata": {"tag": tag}}
    marker = "LONE-SURROGATE"
    if field == "metadata-value":
        record["metadata"]["v"] = marker
    elif field == "metadata-key":
        record["metadata"][marker] = 1
    else:
        record[field] = marker
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "memory/remember",
        "params": {"records": [record]},
    }
    response = peer.raw(json.dumps(message).replace(marker, "\\ud800"))
    assert response is not None
    if "error" in response:
        assert response["error"]["code"] == -32602
    else:
        (stored,) = peer.timeline(where={"tag": tag})
        assert "\ud800" in json.dumps(stored, ensure_ascii=False)


@pytest.mark.spec("5.2")
@pytest.mark.parametrize("method", ["memory/recall", "memory/timeline", "memory/forget"])
def test_5_2_a_huge_integer_in_where_is_not_an_internal_error(peer: Peer, method: str) -> None:
    """§5.2 where values are any JSON number; 2**70 does not fit an SQLite INTEGER, and
    must still filter (matching nothing here) or be refused as -32602, never -32603."""
    failure: Any = None
    try:
        peer.call(method, {"where": {"n": 2**70, "tag": uid("tag")}})
    except Exception as exc:  # an RpcFailure
        failure = exc
    assert failure is None or failure.code == -32602, failure


@pytest.mark.spec("7")
def test_7_oversized_values_in_known_params_are_invalid_params(peer: Peer) -> None:
    """Numbers a parameter cannot hold are the caller's error, not the server's fault."""
    huge = 10**400
    cases: list[tuple[str, dict[str, Any]]] = [
        ("memory/reinforce", {"ids": ["x"], "amount": huge}),
        ("memory/remember", {"records": [{"content": "x", "salience": huge}]}),
        ("memory/remember", {"records": [{"content": "x", "embedding": [huge, 1]}]}),
        ("memory/recall", {"min_score": huge}),
    ]
    for method, params in cases:
        assert rpc_error(peer, method, params).code == -32602, method
    assert rpc_error(peer, "memory/recall", {"limit": huge}).code in (-32602, -32006)
