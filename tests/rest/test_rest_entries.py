"""The draft's entry routes one by one (write, read, list, delete, bulk delete), with TTL
and key conflicts; bad input is in ``test_rest_bad_input.py``."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from rest_support import Rest, assert_error, entry_body, eventually, uid, unchanged

from a2m_server import A2MServer

ENTRY_FIELDS = {"id", "key", "namespace", "type", "value", "embedding", "meta"}
META_FIELDS = {
    "source_agent",
    "source_framework",
    "created_at",
    "updated_at",
    "ttl_s",
    "tags",
    "confidence",
}


# --- write and read ---------------------------------------------------------------------


def test_upsert_creates_with_201_then_replaces_with_200(rest: Rest) -> None:
    ns = f"app/{uid('wf')}"
    first = rest.put(
        ns,
        entry_body(
            "user/goal",
            "semantic",
            "Build a real-time translation pipeline",
            embedding=[0.12, -0.04, 0.87],
            meta={"tags": ["user", "goal"], "confidence": 0.95, "source_agent": "planner"},
        ),
    )
    assert first.status_code == 201
    created = first.json()
    assert set(created) == ENTRY_FIELDS
    assert set(created["meta"]) == META_FIELDS
    assert created["namespace"] == ns
    assert created["key"] == "user/goal"
    assert created["embedding"] == [0.12, -0.04, 0.87]
    assert created["meta"]["tags"] == ["user", "goal"]
    assert created["meta"]["confidence"] == 0.95
    assert created["meta"]["created_at"] == created["meta"]["updated_at"]
    time.sleep(0.01)
    second = rest.put(
        ns,
        entry_body("user/goal", "procedural", {"steps": [1, 2]}, meta={"source_framework": "n8n"}),
    )
    assert second.status_code == 200
    replaced = second.json()
    assert replaced["id"] == created["id"]
    assert replaced["meta"]["created_at"] == created["meta"]["created_at"]
    assert replaced["meta"]["updated_at"] > created["meta"]["updated_at"]
    assert replaced["type"] == "procedural"
    assert replaced["value"] == {"steps": [1, 2]}
    assert replaced["embedding"] is None
    assert replaced["meta"]["tags"] == []
    assert replaced["meta"]["confidence"] is None
    assert replaced["meta"]["source_agent"] is None
    assert replaced["meta"]["source_framework"] == "n8n"
    assert rest.read(ns, "user/goal").json() == replaced


@pytest.mark.parametrize(
    "value", ["text", "", {"a": {"b": [1, 2.5, None]}}, [1, "two"], 42, 3.5, True, None]
)
def test_any_json_value_round_trips(rest: Rest, value: Any) -> None:
    ns = uid("values")
    written = rest.write(ns, "k", "episodic", value)
    assert written["value"] == value
    assert rest.read(ns, "k").json()["value"] == value


def test_meta_keys_of_its_own_round_trip_and_server_times_are_ignored(rest: Rest) -> None:
    ns = uid("meta")
    meta = {
        "ttl_s": 3600,
        "custom": {"deep": [1, 2]},
        "nothing": None,
        "created_at": "1999-01-01T00:00:00.000Z",
        "namespace": "spoofed",
    }
    entry = rest.write(ns, "k", "semantic", "v", meta=meta)
    assert entry["meta"]["custom"] == {"deep": [1, 2]}
    assert entry["meta"]["nothing"] is None
    assert entry["meta"]["ttl_s"] == 3600
    assert entry["meta"]["created_at"] != "1999-01-01T00:00:00.000Z"
    assert "namespace" not in entry["meta"]
    assert entry["namespace"] == ns


def test_external_entries_carry_a_reference(rest: Rest) -> None:
    ns = uid("ext")
    plain = rest.write(ns, "doc/readme", "external", "file:///srv/readme.md")
    assert plain["type"] == "external"
    assert plain["value"] == "file:///srv/readme.md"
    described = {"uri": "https://example.org/a.pdf", "title": "Annual report", "pages": 12}
    rich = rest.write(ns, "doc/report", "external", described)
    assert rich["type"] == "external"
    assert rich["value"] == described


def test_unknown_fields_in_the_body_are_ignored(rest: Rest) -> None:
    ns = uid("extra")
    body = {**entry_body("k", "working", "v"), "id": "forged", "namespace": "other", "x": 1}
    response = rest.put(ns, body)
    assert response.status_code == 201
    assert response.json()["id"] != "forged"
    assert response.json()["namespace"] == ns


def test_a_key_with_slashes_is_addressed_as_is_or_percent_encoded(rest: Rest) -> None:
    ns = uid("slash")
    written = rest.write(ns, "a/b c/d?e#f", "semantic", "v")
    encoded = httpx.URL(rest.base + f"{ns}/entries/").copy_with(
        raw_path=f"/a2m/v1/{ns}/entries/a%2Fb%20c%2Fd%3Fe%23f".encode()
    )
    response = rest.http.get(encoded)
    assert response.status_code == 200
    assert response.json() == written


def test_a_missing_entry_is_404_entry_not_found(rest: Rest) -> None:
    body = assert_error(rest.read(uid("none"), "nothing"), 404, "ENTRY_NOT_FOUND")
    assert "nothing" in body["message"]


def test_an_entry_is_read_only_at_its_own_namespace_and_key(rest: Rest) -> None:
    ns = uid("exact")
    rest.write(ns, "b/c", "semantic", "v")
    # Same A2M key (ns/b/c), another entry address.
    assert_error(rest.read(f"{ns}/b", "c"), 404, "ENTRY_NOT_FOUND")
    assert_error(rest.delete(f"{ns}/b", "c"), 404, "ENTRY_NOT_FOUND")
    assert rest.read(ns, "b/c").status_code == 200


def test_two_entries_never_share_an_a2m_key(rest: Rest, server: A2MServer) -> None:
    ns = uid("conflict")
    rest.write(ns, "b/c", "semantic", "v")
    with unchanged(server):
        body = assert_error(
            rest.put(f"{ns}/b", entry_body("c", "semantic", "w")), 409, "KEY_CONFLICT"
        )
    assert body["data"]["a2m_key"] == f"{ns}/b/c"
    assert rest.read(ns, "b/c").json()["value"] == "v"


# --- delete -------------------------------------------------------------------------------


def test_delete_is_204_then_404(rest: Rest) -> None:
    ns = uid("del")
    rest.write(ns, "k", "working", "v")
    response = rest.delete(ns, "k")
    assert response.status_code == 204
    assert response.content == b""
    assert_error(rest.read(ns, "k"), 404, "ENTRY_NOT_FOUND")
    assert_error(rest.delete(ns, "k"), 404, "ENTRY_NOT_FOUND")


def _bulk(rest: Rest, ns: str, **params: Any) -> int:
    response = rest.request("DELETE", f"{ns}/entries", params=params)
    assert response.status_code == 204, response.text
    return int(response.headers["x-deleted-count"])


def _keys(rest: Rest, ns: str, **params: Any) -> list[str]:
    response = rest.list(ns, limit=500, **params)
    assert response.status_code == 200, response.text
    return [e["key"] for e in response.json()["entries"]]


def test_bulk_delete_by_type_and_tag_counts_what_went(rest: Rest) -> None:
    ns = uid("bulk")
    rest.write(ns, "a", "semantic", "v", meta={"tags": ["x", "y"]})
    rest.write(ns, "b", "semantic", "v", meta={"tags": ["x"]})
    rest.write(ns, "c", "procedural", "v", meta={"tags": ["x", "y"]})
    rest.write(f"{ns}/child", "d", "semantic", "v", meta={"tags": ["x", "y"]})
    assert _bulk(rest, ns, type="semantic", tag=["x", "y"]) == 1
    assert _keys(rest, ns) == ["b", "c"]
    assert _bulk(rest, ns, type="episodic") == 0
    assert _bulk(rest, ns) == 2
    assert _keys(rest, ns) == []
    assert _keys(rest, f"{ns}/child") == ["d"]
    assert _bulk(rest, ns, recursive="true") == 1
    assert _keys(rest, ns, recursive="true") == []


# --- list ---------------------------------------------------------------------------------


def test_list_filters_by_type_and_every_tag(rest: Rest) -> None:
    ns = uid("list")
    rest.write(ns, "one", "semantic", "v", meta={"tags": ["red", "big"]})
    rest.write(ns, "two", "episodic", "v", meta={"tags": ["red"]})
    rest.write(ns, "three", "semantic", "v", meta={"tags": ["big"]})
    assert _keys(rest, ns) == ["one", "two", "three"]
    assert _keys(rest, ns, type="semantic") == ["one", "three"]
    assert _keys(rest, ns, tag="red") == ["one", "two"]
    assert _keys(rest, ns, tag=["red", "big"]) == ["one"]
    assert _keys(rest, ns, type="episodic", tag="big") == []


def test_list_pages_with_limit_offset_total_and_next_offset(rest: Rest) -> None:
    ns = uid("page")
    for n in range(5):
        rest.write(ns, f"k{n}", "semantic", n)
    first = rest.list(ns, limit=2).json()
    assert [e["key"] for e in first["entries"]] == ["k0", "k1"]
    assert (first["total"], first["next_offset"]) == (5, 2)
    last = rest.list(ns, limit=2, offset=4).json()
    assert [e["key"] for e in last["entries"]] == ["k4"]
    assert (last["total"], last["next_offset"]) == (5, None)
    beyond = rest.list(ns, offset=10).json()
    assert (beyond["entries"], beyond["total"], beyond["next_offset"]) == ([], 5, None)
    assert len(rest.list(ns, limit=500).json()["entries"]) == 5
    assert rest.list(ns).json()["next_offset"] is None


def test_list_is_exact_unless_recursive(rest: Rest) -> None:
    ns = uid("tree")
    rest.write(ns, "top", "semantic", "v")
    rest.write(f"{ns}/a", "mid", "semantic", "v")
    rest.write(f"{ns}/a/b", "deep", "semantic", "v")
    rest.write(f"{ns}x", "sibling", "semantic", "v")
    assert _keys(rest, ns) == ["top"]
    assert _keys(rest, f"{ns}/a") == ["mid"]
    listed = rest.list(ns, recursive="true", limit=500).json()
    assert [(e["namespace"], e["key"]) for e in listed["entries"]] == [
        (ns, "top"),
        (f"{ns}/a", "mid"),
        (f"{ns}/a/b", "deep"),
    ]
    assert listed["total"] == 3


# --- TTL ----------------------------------------------------------------------------------


def test_an_entry_expires_ttl_seconds_after_its_last_write(rest: Rest) -> None:
    ns = uid("ttl")
    rest.write(ns, "short", "working", "v", meta={"ttl_s": 1})
    rest.write(ns, "kept", "working", "v", meta={"ttl_s": 1})
    rest.write(ns, "kept", "working", "v")  # an upsert without ttl_s makes it permanent
    assert rest.read(ns, "short").status_code == 200
    eventually(lambda: True if rest.read(ns, "short").status_code == 404 else None, timeout=5)
    assert _keys(rest, ns) == ["kept"]
    time.sleep(1.1)
    assert rest.read(ns, "kept").status_code == 200
