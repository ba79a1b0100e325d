"""Bad input on the entry routes, each refused with the draft's status and body and nothing
written; and the routing around them (405 with ``Allow``, ``OPTIONS``, ``HEAD``, unknown
paths, plain HTTP to the WebSocket route)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from rest_support import Rest, assert_error, entry_body, store_state, uid, unchanged

from a2m_server import A2MServer
from a2m_server.bindings.http import create_app
from a2m_testing.servers import serve_http

# --- bad input ----------------------------------------------------------------------------

BAD_BODIES: list[tuple[str, Any, int, str]] = [
    ("not an object", ["k"], 400, "INVALID_BODY"),
    ("no key", {"type": "semantic", "value": "v"}, 400, "INVALID_BODY"),
    ("no type", {"key": "k", "value": "v"}, 400, "INVALID_BODY"),
    ("no value", {"key": "k", "type": "semantic"}, 400, "INVALID_BODY"),
    ("key not a string", entry_body(5, "semantic", "v"), 400, "INVALID_BODY"),
    ("empty key", entry_body("", "semantic", "v"), 400, "INVALID_BODY"),
    ("over-long key", entry_body("k" * 513, "semantic", "v"), 400, "INVALID_BODY"),
    ("dot-dot key", entry_body("a/../b", "semantic", "v"), 400, "INVALID_BODY"),
    ("empty key segment", entry_body("a//b", "semantic", "v"), 400, "INVALID_BODY"),
    ("control character", entry_body("a\nb", "semantic", "v"), 400, "INVALID_BODY"),
    ("unknown type", entry_body("k", "scratch", "v"), 422, "INVALID_TYPE"),
    ("type not a string", entry_body("k", 3, "v"), 422, "INVALID_TYPE"),
    (
        "embedding of strings",
        entry_body("k", "semantic", "v", embedding=["a"]),
        400,
        "INVALID_BODY",
    ),
    ("empty embedding", entry_body("k", "semantic", "v", embedding=[]), 400, "INVALID_BODY"),
    (
        "beyond float32",
        entry_body("k", "semantic", "v", embedding=[1e39, 0.0, 0.0]),
        400,
        "INVALID_BODY",
    ),
    ("tags not a list", entry_body("k", "semantic", "v", meta={"tags": "x"}), 400, "INVALID_BODY"),
    (
        "confidence above 1",
        entry_body("k", "semantic", "v", meta={"confidence": 2}),
        400,
        "INVALID_BODY",
    ),
    ("ttl of zero", entry_body("k", "semantic", "v", meta={"ttl_s": 0}), 400, "INVALID_BODY"),
    ("ttl as text", entry_body("k", "semantic", "v", meta={"ttl_s": "5"}), 400, "INVALID_BODY"),
    ("meta not an object", entry_body("k", "semantic", "v", meta=[1]), 400, "INVALID_BODY"),
    ("external number", entry_body("k", "external", 42), 400, "INVALID_BODY"),
    ("external without uri", entry_body("k", "external", {"title": "t"}), 400, "INVALID_BODY"),
]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [pytest.param(body, status, code, id=name) for name, body, status, code in BAD_BODIES],
)
def test_a_bad_body_is_refused_and_nothing_is_written(
    rest: Rest, server: A2MServer, body: Any, status: int, code: str
) -> None:
    with unchanged(server):
        assert_error(rest.put(uid("bad"), body), status, code)


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b"not json",
        b'{"key": "k", "type": "semantic", "value": NaN}',
        b'{"key": "k", "type": "semantic", "value": 1e400}',
        b"\xff",
        b"",
    ],
)
def test_malformed_json_is_400_invalid_body(rest: Rest, server: A2MServer, raw: bytes) -> None:
    with unchanged(server):
        response = rest.request(
            "POST",
            f"{uid('bad')}/entries",
            content=raw,
            headers={"content-type": "application/json"},
        )
        assert_error(response, 400, "INVALID_BODY")


@pytest.mark.parametrize(
    ("route", "raw"),
    [
        ("entries", b'{"key": "k", "type": "semantic", "value": "\\ud800"}'),
        ("entries", b'{"key": "k", "type": "external", "value": "http://x/\\ud800"}'),
        ("entries", b'{"key": "k", "type": "semantic", "value": "v", "meta": {"\\udfff": 1}}'),
        ("query", b'{"query": "a", "tag": ["\\ud800"]}'),
    ],
    ids=["value", "external-uri", "meta-key", "query-tag"],
)
def test_a_lone_surrogate_anywhere_is_400_invalid_body(
    rest: Rest, server: A2MServer, route: str, raw: bytes
) -> None:
    """JSON can spell a lone surrogate (``\\ud800``), UTF-8 text cannot: refused where
    it is named, whatever field holds it (a string value reached the store, a 500)."""
    with unchanged(server):
        response = rest.request(
            "POST", f"{uid('bad')}/{route}", content=raw,
            headers={"content-type": "application/json"},
        )  # fmt: skip
        assert_error(response, 400, "INVALID_BODY")
        assert "lone surrogate" in response.json()["message"]


@pytest.mark.parametrize(
    "where",
    [
        "[" * 5000 + "]" * 5000,
        '{"a": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"key": "\\ud800"}',
        '{"\\ud800": 1}',
        '{"n": NaN}',
        "not json",
    ],
    ids=["deep-array", "deep-value", "surrogate-value", "surrogate-key", "nan", "garbage"],
)
@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_bad_where_parameter_is_400_invalid_body_and_deletes_nothing(
    rest: Rest, server: A2MServer, where: str, method: str
) -> None:
    ns = uid("where")
    rest.write(ns, "kept", "semantic", "must survive")
    with unchanged(server):
        response = rest.request(method, f"{ns}/entries", params={"where": where})
        body = assert_error(response, 400, "INVALID_BODY")
    assert body["data"] == {"field": "where"}
    assert rest.read(ns, "kept").status_code == 200  # the connection still answers


def test_a_wrong_embedding_width_is_422_dimension_mismatch(rest: Rest, server: A2MServer) -> None:
    ns = uid("width")
    rest.write(ns, "fixes-width", "semantic", "v", embedding=[1.0, 0.0, 0.0])
    with unchanged(server):
        body = assert_error(
            rest.put(ns, entry_body("k", "semantic", "v", embedding=[1.0, 0.0])),
            422,
            "DIMENSION_MISMATCH",
        )
    assert body["a2m_code"] == -32008
    assert body["data"] == {"expected": 3, "got": 2, "index": 0}


def test_an_oversize_value_is_422_quota_exceeded(rest: Rest, server: A2MServer) -> None:
    limit = server.config.limits.max_content_length
    with unchanged(server):
        body = assert_error(
            rest.put(uid("big"), entry_body("k", "semantic", "x" * (limit + 1))),
            422,
            "QUOTA_EXCEEDED",
        )
        assert body["a2m_code"] == -32006
        big_object = {"text": "x" * limit}
        assert_error(
            rest.put(uid("big"), entry_body("k", "semantic", big_object)), 422, "QUOTA_EXCEEDED"
        )


@pytest.mark.parametrize(
    "namespace",
    ["App", "a b", "a.b", "a:b", "a/B/c", "ünï", "x" * 257],
)
def test_a_bad_namespace_is_422_on_every_route(
    rest: Rest, server: A2MServer, namespace: str
) -> None:
    with unchanged(server):
        assert_error(
            rest.put(namespace, entry_body("k", "semantic", "v")), 422, "INVALID_NAMESPACE"
        )
        assert_error(rest.read(namespace, "k"), 422, "INVALID_NAMESPACE")
        assert_error(rest.list(namespace), 422, "INVALID_NAMESPACE")
        assert_error(rest.delete(namespace, "k"), 422, "INVALID_NAMESPACE")
        assert_error(rest.request("DELETE", f"{namespace}/entries"), 422, "INVALID_NAMESPACE")
        assert_error(rest.query(namespace, {"query": "q"}), 422, "INVALID_NAMESPACE")


@pytest.mark.parametrize("name", ["type", "limit", "offset", "recursive", "where", "cursor"])
@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_a_parameter_given_twice_is_400_and_deletes_nothing(
    rest: Rest, server: A2MServer, name: str, method: str
) -> None:
    """``?type=semantic&type=working`` asks two things at once: refused, not one of them
    taken without a word (a DELETE by the wrong one would delete the wrong entries)."""
    ns = uid("twice")
    rest.write(ns, "kept", "semantic", "must survive")
    values = {
        "type": ["semantic", "working"],
        "limit": ["1", "2"],
        "offset": ["0", "1"],
        "recursive": ["true", "false"],
        "where": ["{}", '{"a": 1}'],
        "cursor": ["", ""],
    }
    with unchanged(server):
        response = rest.request(method, f"{ns}/entries", params=[(name, v) for v in values[name]])
        body = assert_error(response, 400, "INVALID_BODY")
    assert body["data"] == {"field": name}
    assert rest.read(ns, "kept").status_code == 200


def test_an_empty_namespace_segment_is_422(rest: Rest) -> None:
    response = rest.http.get(httpx.URL(rest.url).copy_with(raw_path=b"/a2m/v1/a//b/entries"))
    assert_error(response, 422, "INVALID_NAMESPACE")
    assert_error(rest.request("GET", "entries"), 422, "INVALID_NAMESPACE")


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"limit": 0}, "INVALID_BODY"),
        ({"limit": 501}, "INVALID_BODY"),
        ({"limit": "ten"}, "INVALID_BODY"),
        ({"offset": -1}, "INVALID_BODY"),
        ({"offset": "1.5"}, "INVALID_BODY"),
        ({"recursive": "maybe"}, "INVALID_BODY"),
        ({"type": "scratch"}, "INVALID_TYPE"),
    ],
)
def test_a_bad_query_parameter_is_refused(
    rest: Rest, server: A2MServer, params: dict[str, Any], code: str
) -> None:
    with unchanged(server):
        assert_error(
            rest.list(uid("params"), **params), 422 if code == "INVALID_TYPE" else 400, code
        )
        if "limit" not in params and "offset" not in params:
            response = rest.request("DELETE", f"{uid('params')}/entries", params=params)
            assert_error(response, 422 if code == "INVALID_TYPE" else 400, code)


def test_a_bad_key_in_the_path_is_400(rest: Rest) -> None:
    assert_error(rest.read(uid("path"), "k" * 513), 400, "INVALID_BODY")


# --- routing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "ns/entries", {"GET", "POST", "DELETE"}),
        ("PATCH", "ns/entries/k", {"GET", "DELETE"}),
        ("GET", "ns/query", {"POST"}),
        ("DELETE", "memory:recall", {"POST"}),
        ("POST", "openapi.json", {"GET"}),
    ],
)
def test_other_methods_are_405_with_allow(
    rest: Rest, method: str, path: str, allow: set[str]
) -> None:
    response = rest.request(method, path)
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    advertised = {m.strip() for m in response.headers["allow"].split(",")}
    assert advertised - {"HEAD", "OPTIONS"} == allow


def test_options_lists_the_methods(rest: Rest) -> None:
    response = rest.request("OPTIONS", "ns/entries")
    assert response.status_code == 204
    assert response.headers["allow"] == "GET, POST, DELETE, HEAD, OPTIONS"


def test_head_answers_like_get_without_a_body(rest: Rest) -> None:
    ns = uid("head")
    rest.write(ns, "k", "semantic", "v")
    response = rest.request("HEAD", f"{ns}/entries/k")
    assert response.status_code == 200
    assert response.content == b""


@pytest.mark.parametrize(
    "path", ["", "nothing-here", "ns/entries-x", "ns/query/extra", "ns/subscribe/x"]
)
def test_an_unknown_route_is_404_not_found(rest: Rest, path: str) -> None:
    assert_error(rest.request("GET", path), 404, "NOT_FOUND")


def test_subscribe_over_plain_http_is_426(rest: Rest) -> None:
    response = rest.request("GET", "ns/subscribe")
    assert_error(response, 426, "UPGRADE_REQUIRED")
    assert response.headers["upgrade"] == "websocket"


def test_rest_can_be_left_out(server: A2MServer) -> None:
    with serve_http(create_app(server, rest=False)) as url:
        assert httpx.get(url + "a2m/v1/openapi.json").status_code == 404


def test_reads_write_nothing(rest: Rest, server: A2MServer) -> None:
    ns = uid("reads")
    rest.write(ns, "k", "semantic", "v")
    before = store_state(server)
    rest.read(ns, "k")
    rest.list(ns)
    rest.request("GET", "openapi.json")
    assert store_state(server) == before
