"""``POST /a2m/v1/memory:{method}``: every A2M method over REST, with the body as its params
and its result as the body back, and every A2M error mapped to its HTTP status and name."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from rest_support import Rest, assert_error, entry_body, uid, unchanged

from a2m_server import A2MServer, LimitsConfig, ServerConfig
from a2m_testing.servers import serve_http
from a2m_types import METHODS


def _ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def test_describe_by_get_and_by_post(rest: Rest) -> None:
    by_get = _ok(rest.request("GET", "memory:describe"))
    by_post = _ok(rest.method("describe", {"protocol": "a2m/0.1"}))
    assert by_get["protocol"] == by_post["protocol"] == "a2m/0.1"
    assert by_get["methods"] == by_post["methods"]
    assert "scopes" not in by_get["capabilities"]  # HTTP without auth (§6)
    assert by_get["events"] == {"push": False}
    assert _ok(rest.request("POST", "memory:describe"))["protocol"] == "a2m/0.1"


def test_every_method_runs_and_answers_its_result(rest: Rest) -> None:
    key = f"{uid('m')}/fact"
    session = uid("s")
    ids = _ok(
        rest.method(
            "remember",
            {
                "records": [
                    {"content": "the deploy key rotates every 90 days", "key": key},
                    {"content": "we talked about keys", "session": session},
                ]
            },
        )
    )["ids"]
    assert len(ids) == 2
    recalled = _ok(rest.method("recall", {"query": "deploy key rotates", "limit": 1}))
    assert recalled["records"][0]["id"] == ids[0]
    timeline = _ok(rest.method("timeline", {"where": {"session": session}}))
    assert [r["id"] for r in timeline["records"]] == [ids[1]]
    assert _ok(rest.method("fetch", {"key": key}))["record"]["id"] == ids[0]
    assert _ok(rest.method("fetch", {"key": key + "/nothing"})) == {"record": None}
    assert _ok(rest.method("reinforce", {"ids": [ids[0]]})) == {"reinforced": 1}
    assert _ok(rest.method("promote", {"ids": [ids[0]], "tier": "semantic"})) == {"promoted": 1}
    consolidated = _ok(rest.method("consolidate"))
    assert set(consolidated) >= {"moved", "promoted", "dropped", "summarized", "counts"}
    sessions = _ok(rest.method("session/list"))["sessions"]
    assert session in [s["session"] for s in sessions]
    closed = _ok(rest.method("session/close", {"session": session}))
    assert closed["closed"] == session
    head = _ok(rest.method("events"))
    assert head["events"] == []
    _ok(rest.method("remember", {"records": [{"content": "after the cursor"}]}))
    polled = _ok(rest.method("events", {"cursor": head["cursor"]}))
    assert [e["kind"] for e in polled["events"]] == ["written"]
    summary = _ok(rest.method("summarize", {"ids": ids, "key": f"{key}-summary"}))
    assert summary["read"] == 2
    assert _ok(rest.method("forget", {"ids": ids})) == {"forgotten": 2}


def test_the_routes_cover_every_method_but_push(rest: Rest) -> None:
    offered = {m for m in METHODS if not m.startswith("memory/events/")}
    paths = _ok(rest.request("GET", "openapi.json"))["paths"]
    assert {"memory/" + p.split("memory:", 1)[1] for p in paths if "memory:" in p} == offered


ERRORS: list[tuple[str, str, Any, int, str, int]] = [
    ("unknown method", "telepathy", {}, 404, "UNKNOWN_METHOD", -32601),
    ("missing params", "fetch", {}, 400, "INVALID_BODY", -32602),
    ("mistyped params", "recall", {"limit": "ten"}, 400, "INVALID_BODY", -32602),
    ("no selector", "forget", {}, 400, "INVALID_BODY", -32602),
    ("bad cursor", "events", {"cursor": "c1.forged"}, 400, "INVALID_BODY", -32602),
    ("unknown tier", "promote", {"ids": ["x"], "tier": "attic"}, 422, "UNKNOWN_TIER", -32002),
    ("over the limit", "recall", {"limit": 100_000}, 422, "QUOTA_EXCEEDED", -32006),
    ("old protocol", "describe", {"protocol": "a2m/0.0"}, 400, "PROTOCOL_NOT_SUPPORTED", -32007),
    ("push", "events/subscribe", {}, 501, "CAPABILITY_NOT_SUPPORTED", -32003),
    ("owner without scopes", "recall", {"owner": "eve"}, 501, "CAPABILITY_NOT_SUPPORTED", -32003),
]


@pytest.mark.parametrize(
    ("method", "params", "status", "code", "a2m_code"),
    [pytest.param(*row[1:], id=row[0]) for row in ERRORS],
)
def test_a2m_errors_map_to_http_statuses(
    rest: Rest, server: A2MServer, method: str, params: Any, status: int, code: str, a2m_code: int
) -> None:
    with unchanged(server):
        body = assert_error(rest.method(method, params), status, code)
    assert body["a2m_code"] == a2m_code


def test_a_wrong_width_is_dimension_mismatch(rest: Rest) -> None:
    rest.write(uid("w"), "k", "semantic", "v", embedding=[1.0, 0.0, 0.0])
    response = rest.method("remember", {"records": [{"content": "c", "embedding": [1.0]}]})
    assert assert_error(response, 422, "DIMENSION_MISMATCH")["a2m_code"] == -32008


@pytest.mark.parametrize("raw", [b"[1, 2]", b'"params"', b"{", b"null x"])
def test_a_body_that_is_not_a_params_object_is_400(rest: Rest, raw: bytes) -> None:
    response = rest.request("POST", "memory:recall", content=raw)
    assert_error(response, 400, "INVALID_BODY")


def test_an_empty_body_is_no_params(rest: Rest) -> None:
    assert "records" in _ok(rest.request("POST", "memory:timeline", content=b""))


# --- servers configured otherwise -----------------------------------------------------------


@pytest.fixture
def make_rest() -> Iterator[Any]:
    opened: list[Any] = []

    def make(server: A2MServer) -> Rest:
        context = serve_http(server)
        url = context.__enter__()
        client = Rest(url)
        opened.append((server, context, client))
        return client

    yield make
    for server, context, client in reversed(opened):
        client.close()
        context.__exit__(None, None, None)
        server.close()


def test_a_read_only_store_refuses_every_write_with_403(make_rest: Any) -> None:
    rest = make_rest(A2MServer(ServerConfig(read_only=True)))
    assert_error(rest.put("ro", entry_body("k", "semantic", "v")), 403, "READ_ONLY")
    assert_error(rest.delete("ro", "k"), 403, "READ_ONLY")
    assert_error(rest.request("DELETE", "ro/entries"), 403, "READ_ONLY")
    assert_error(rest.method("remember", {"records": [{"content": "c"}]}), 403, "READ_ONLY")
    assert _ok(rest.list("ro"))["entries"] == []


def test_without_keys_the_entry_routes_are_501(make_rest: Any) -> None:
    rest = make_rest(A2MServer(ServerConfig().with_capabilities(["core", "tiers"])))
    for response in (
        rest.put("ns", entry_body("k", "semantic", "v")),
        rest.read("ns", "k"),
        rest.list("ns"),
        rest.query("ns", {"query": "q"}),
        rest.delete("ns", "k"),
    ):
        body = assert_error(response, 501, "CAPABILITY_NOT_SUPPORTED")
        assert body["data"] == {"capability": "keys"}
    assert_error(rest.method("fetch", {"key": "k"}), 501, "CAPABILITY_NOT_SUPPORTED")


def test_without_embeddings_or_external_those_entries_are_501(make_rest: Any) -> None:
    rest = make_rest(A2MServer(ServerConfig().with_capabilities(["core", "keys"])))
    vector = entry_body("k", "semantic", "v", embedding=[1.0])
    assert_error(rest.put("ns", vector), 501, "CAPABILITY_NOT_SUPPORTED")
    assert_error(
        rest.put("ns", entry_body("k", "external", "file:///x")), 501, "CAPABILITY_NOT_SUPPORTED"
    )
    assert_error(rest.query("ns", {"embedding": [1.0]}), 501, "CAPABILITY_NOT_SUPPORTED")


def test_without_tiers_the_type_lives_in_metadata(make_rest: Any) -> None:
    rest = make_rest(A2MServer(ServerConfig().with_capabilities(["core", "keys"])))
    rest.write("ns", "a", "procedural", "v")
    rest.write("ns", "b", "working", "v")
    rest.write("ns", "c", "semantic", "v")
    assert rest.read("ns", "a").json()["type"] == "procedural"
    listed = _ok(rest.list("ns", type="semantic"))["entries"]
    assert [e["key"] for e in listed] == ["c"]


def test_a_type_without_a_tier_of_its_kind_is_422(make_rest: Any) -> None:
    from a2m_server import TierConfig

    config = ServerConfig(tiers=(TierConfig("notes", kind="semantic"),))
    rest = make_rest(A2MServer(config))
    assert_error(rest.put("ns", entry_body("k", "working", "v")), 422, "INVALID_TYPE")
    assert rest.write("ns", "k", "semantic", "v")["type"] == "semantic"


def test_the_value_limit_is_the_servers(make_rest: Any) -> None:
    rest = make_rest(A2MServer(ServerConfig(limits=LimitsConfig(max_content_length=10))))
    assert rest.write("ns", "k", "semantic", "0123456789")["value"] == "0123456789"
    assert_error(rest.put("ns", entry_body("k", "semantic", "0123456789!")), 422, "QUOTA_EXCEEDED")


def test_a_store_failure_is_500_backend_error(
    make_rest: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = A2MServer()
    rest = make_rest(server)
    rest.write("ns", "k", "semantic", "v")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(server.store, "reading", broken)
    body = assert_error(rest.read("ns", "k"), 500, "BACKEND_ERROR")
    assert "disk" not in body["message"]
    assert assert_error(rest.method("timeline"), 500, "BACKEND_ERROR")["a2m_code"] == -32603


def test_a_closed_server_is_503(make_rest: Any) -> None:
    server = A2MServer()
    rest = make_rest(server)
    server.close()
    assert_error(rest.read("ns", "k"), 503, "UNAVAILABLE")
    assert_error(rest.method("describe"), 503, "UNAVAILABLE")


def test_a_record_joining_a_group_in_another_tier_is_409(rest: Rest) -> None:
    group = uid("g")
    _ok(rest.method("remember", {"records": [{"content": "a", "group": group, "tier": "working"}]}))
    response = rest.method(
        "remember", {"records": [{"content": "b", "group": group, "tier": "episodic"}]}
    )
    body = assert_error(response, 409, "CONFLICT")
    assert (body["a2m_code"], body["data"]["group"]) == (-32602, group)


@pytest.mark.parametrize("raw", [b"null", b"\n", b" "])
def test_a_null_or_blank_body_is_not_an_empty_one(rest: Rest, raw: bytes) -> None:
    assert_error(rest.request("POST", "memory:session/list", content=raw), 400, "INVALID_BODY")


def test_a_whole_float_is_an_integer(rest: Rest) -> None:
    # JSON Schema (and so the OpenAPI document) counts 2.0 as an integer.
    assert (
        len(_ok(rest.method("timeline", {"limit": 1.0, "prompt": {"budget": 100.0}}))["records"])
        <= 1
    )
    ns = uid("whole")
    rest.write(ns, "a", "semantic", 1.0, meta={"ttl_s": 600.0, "score": 2.0})
    entry = rest.read(ns, "a").json()
    assert (entry["value"], entry["meta"]["ttl_s"], entry["meta"]["score"]) == (1.0, 600, 2.0)
    assert rest.list(ns, limit="1.0").json()["total"] == 1
    assert _ok(rest.query(ns, {"query": "x", "top_k": 2.0})) == []
    assert_error(rest.method("timeline", {"limit": 1.5}), 400, "INVALID_BODY")
