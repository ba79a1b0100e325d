"""REST and JSON-RPC are two views of one store: what one writes, the other reads, in the
shape docs/rest-binding.md documents, and deletes and events are shared."""

from __future__ import annotations

from typing import Any

from rest_support import Rest, rpc, uid

from a2m_server import A2MServer
from a2m_testing.servers import serve_http


def _only(records: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(records) == 1, records
    return records[0]


def test_rest_write_is_recalled_over_json_rpc_and_read_back_identical(rest: Rest, url: str) -> None:
    ns = f"app/{uid('wf')}"
    written = rest.write(
        ns,
        "user/goal",
        "semantic",
        {"goal": "translation pipeline", "languages": ["it", "en"]},
        embedding=[0.12, -0.04, 0.87],
        meta={"tags": ["user", "goal"], "confidence": 0.95, "source_framework": "n8n"},
    )
    record = _only(
        rpc(
            url,
            "memory/recall",
            {"query": "translation pipeline", "key_prefix": ns, "embeddings": True},
        )["records"]
    )
    assert record["id"] == written["id"]
    assert record["key"] == f"{ns}/user/goal"
    assert record["content"] == '{"goal":"translation pipeline","languages":["it","en"]}'
    assert record["metadata"] == {
        "namespace": ns,
        "type": "semantic",
        "value": {"goal": "translation pipeline", "languages": ["it", "en"]},
        "tags": ["user", "goal"],
        "confidence": 0.95,
        "source_framework": "n8n",
    }
    assert record["tier"] == "semantic"
    assert record["salience"] == 0.95
    assert record["embedding"] == [0.12, -0.04, 0.87]
    assert record["created_at"] == written["meta"]["created_at"]
    fetched = rpc(url, "memory/fetch", {"key": f"{ns}/user/goal"})["record"]
    assert fetched["id"] == written["id"]
    again = rest.read(ns, "user/goal").json()
    assert again == written


def test_a_string_value_is_the_content_itself(rest: Rest, url: str) -> None:
    ns = uid("text")
    rest.write(ns, "note", "episodic", "the deploy key rotates every 90 days")
    record = rpc(url, "memory/fetch", {"key": f"{ns}/note"})["record"]
    assert record["content"] == "the deploy key rotates every 90 days"
    assert "value" not in record["metadata"]
    assert record["tier"] == "episodic"


def test_an_external_entry_is_a_record_with_a_uri(rest: Rest, url: str) -> None:
    ns = uid("ext")
    rest.write(ns, "report", "external", {"uri": "s3://bucket/report.pdf", "title": "Q3 report"})
    record = rpc(url, "memory/fetch", {"key": f"{ns}/report"})["record"]
    assert record["uri"] == "s3://bucket/report.pdf"
    assert record["content"] == "Q3 report"
    assert record["tier"] == "semantic"


def test_json_rpc_record_with_a_key_is_an_entry(rest: Rest, url: str) -> None:
    app = uid("app")
    (record_id,) = rpc(
        url,
        "memory/remember",
        {
            "records": [
                {
                    "content": "Rome",
                    "key": f"{app}/wf/user/city",
                    "metadata": {"tags": ["geo"], "source_framework": "langchain"},
                    "salience": 0.5,
                }
            ]
        },
    )["ids"]
    exact = rest.list(f"{app}/wf/user").json()
    entry = _only(exact["entries"])
    assert (entry["id"], entry["namespace"], entry["key"]) == (record_id, f"{app}/wf/user", "city")
    assert entry["value"] == "Rome"
    assert entry["type"] == "working"
    assert entry["meta"]["tags"] == ["geo"]
    assert entry["meta"]["source_framework"] == "langchain"
    assert entry["meta"]["confidence"] == 0.5
    assert rest.list(f"{app}/wf").json()["entries"] == []
    assert _only(rest.list(app, recursive="true").json()["entries"]) == entry
    assert rest.read(f"{app}/wf/user", "city").json() == entry
    # Unclaimed by a namespace, the record answers to any address that spells its key.
    by_prefix = rest.read(f"{app}/wf", "user/city").json()
    assert (by_prefix["id"], by_prefix["namespace"], by_prefix["key"]) == (
        record_id,
        f"{app}/wf",
        "user/city",
    )


def test_json_rpc_records_without_a_place_over_rest_are_not_entries(rest: Rest, url: str) -> None:
    app = uid("app")
    rpc(
        url,
        "memory/remember",
        {"records": [{"content": "no key"}, {"content": "flat", "key": app}]},
    )
    assert rest.list(app, recursive="true").json() == {
        "entries": [],
        "total": 0,
        "next_offset": None,
    }


def test_json_rpc_keys_rest_cannot_name_are_left_out_never_a_failure(rest: Rest, url: str) -> None:
    """One record at a key REST could not address must not make a whole namespace
    unreadable over REST: lists (flat, recursive, paged) and queries leave it out."""
    app = uid("app")
    odd = [f"{app}/x/", f"{app}//y", f"{app}/a b/c", f"{app}/A/c", f"{app}/q/../r",
           f"{app}/s/t/", f"{app}/k/" + "z" * 600]  # fmt: skip
    records = [{"content": "kept words", "key": f"{app}/ok"}]
    records += [{"content": "odd words", "key": key} for key in odd]
    rpc(url, "memory/remember", {"records": records})
    for params in ({}, {"recursive": "true"}, {"recursive": "true", "limit": 1, "offset": 1}):
        answer = rest.list(app, **params)
        assert answer.status_code == 200, (params, answer.text)
        assert {e["key"] for e in answer.json()["entries"]} <= {"ok"}
    assert [e["key"] for e in rest.list(app, recursive="true").json()["entries"]] == ["ok"]
    found = rest.query(app, {"query": "kept odd words", "recursive": True})
    assert found.status_code == 200, found.text
    assert [hit["entry"]["key"] for hit in found.json()] == ["ok"]


def test_structured_value_in_json_rpc_metadata_is_the_entry_value(rest: Rest, url: str) -> None:
    ns = uid("val")
    rpc(
        url,
        "memory/remember",
        {
            "records": [
                {
                    "content": "Rome, Italy",
                    "key": f"{ns}/city",
                    "metadata": {"value": {"city": "Rome"}},
                }
            ]
        },
    )
    assert rest.read(ns, "city").json()["value"] == {"city": "Rome"}


def test_a_rest_upsert_claims_a_json_rpc_record(rest: Rest, url: str) -> None:
    ns = uid("claim")
    (record_id,) = rpc(
        url, "memory/remember", {"records": [{"content": "v1", "key": f"{ns}/a/b"}]}
    )["ids"]
    response = rest.put(ns, {"key": "a/b", "type": "semantic", "value": "v2"})
    assert response.status_code == 200
    assert response.json()["id"] == record_id
    record = rpc(url, "memory/fetch", {"key": f"{ns}/a/b"})["record"]
    assert (record["content"], record["revision"], record["metadata"]["namespace"]) == ("v2", 1, ns)
    # Now it has a namespace, the other spelling of its key is another entry's address.
    assert rest.read(f"{ns}/a", "b").status_code == 404
    assert rest.put(f"{ns}/a", {"key": "b", "type": "semantic", "value": "x"}).status_code == 409


def test_json_rpc_key_replacement_shows_over_rest(rest: Rest, url: str) -> None:
    ns = uid("replace")
    written = rest.write(ns, "fact", "semantic", "old")
    rpc(url, "memory/remember", {"records": [{"content": "new", "key": f"{ns}/fact"}]})
    entry = rest.read(ns, "fact").json()
    assert (entry["id"], entry["value"], entry["type"]) == (written["id"], "new", "semantic")


def test_rest_delete_is_gone_from_the_json_rpc_timeline(rest: Rest, url: str) -> None:
    ns = uid("gone")
    kept = rest.write(ns, "kept", "episodic", "stays")
    dropped = rest.write(ns, "dropped", "episodic", "goes")
    cursor = rpc(url, "memory/events")["cursor"]
    assert rest.delete(ns, "dropped").status_code == 204
    ids = [r["id"] for r in rpc(url, "memory/timeline", {"key_prefix": ns})["records"]]
    assert ids == [kept["id"]]
    events = rpc(url, "memory/events", {"cursor": cursor})["events"]
    assert [(e["kind"], e.get("ids")) for e in events] == [("forgotten", [dropped["id"]])]


def test_rest_writes_are_written_events(rest: Rest, url: str) -> None:
    ns = uid("events")
    cursor = rpc(url, "memory/events")["cursor"]
    entry = rest.write(ns, "k", "semantic", "v")
    rest.write(ns, "k", "semantic", "w")
    events = rpc(url, "memory/events", {"cursor": cursor})["events"]
    assert [(e["kind"], e["id"], e["key"], e["revision"]) for e in events] == [
        ("written", entry["id"], f"{ns}/k", 0),
        ("written", entry["id"], f"{ns}/k", 1),
    ]


def test_a_spilled_working_entry_reads_as_episodic() -> None:
    with A2MServer() as server, serve_http(server) as url:
        rest = Rest(url)
        try:
            first = rest.write("ns", "k0", "working", "v")
            for n in range(1, 65):
                rest.write("ns", f"k{n}", "working", "v")
            # The working tier holds 64 (per session): the oldest moved to episodic.
            assert rest.read("ns", "k0").json()["type"] == "episodic"
            assert rest.read("ns", "k0").json()["id"] == first["id"]
            assert rest.read("ns", "k64").json()["type"] == "working"
            listed = rest.list("ns", type="episodic").json()
            assert [e["key"] for e in listed["entries"]] == ["k0"]
        finally:
            rest.close()


def test_a_namespace_beneath_never_reaches_its_parents_entries(rest: Rest, url: str) -> None:
    """The entry ``a/x`` of namespace ``p`` lies at the A2M key ``p/a/x``, beneath ``p/a``:
    a recursive list, query or clear of ``p/a`` leaves it alone, since it is ``p``'s."""
    parent = uid("p")
    rest.write(parent, "a/x", "working", "the parent's entry")
    rest.write(f"{parent}/a", "y", "working", "the child's entry")
    rest.write(f"{parent}/a/b", "z", "working", "the grandchild's entry")
    for params in ({}, {"recursive": "true"}):
        listed = rest.list(f"{parent}/a", **params).json()["entries"]
        keys = sorted((e["namespace"], e["key"]) for e in listed)
        expected = [(f"{parent}/a", "y")]
        if params:
            expected.append((f"{parent}/a/b", "z"))
        assert keys == expected
        assert rest.list(f"{parent}/a", **params).json()["total"] == len(expected)
    found = rest.query(f"{parent}/a", {"query": "entry", "recursive": True}).json()
    assert {r["entry"]["key"] for r in found} == {"y", "z"}
    cleared = rest.request("DELETE", f"{parent}/a/entries", params={"recursive": "true"})
    assert cleared.headers["X-Deleted-Count"] == "2"
    assert rest.read(parent, "a/x").status_code == 200
    assert [e["key"] for e in rest.list(parent, recursive="true").json()["entries"]] == ["a/x"]


def test_a_record_is_listed_where_it_is_read(rest: Rest, url: str) -> None:
    """A JSON-RPC record whose metadata.namespace is not a namespace its key lies beneath
    (another meaning of the word, or no string) reads in the namespace before its key's
    last "/": that namespace's list shows it and its clear deletes it."""
    app = uid("app")
    rpc(url, "memory/remember", {"records": [
        {"content": "c1", "key": f"{app}/x/k1", "metadata": {"namespace": "billing"}},
        {"content": "c2", "key": f"{app}/x/k2", "metadata": {"namespace": 5}},
    ]})  # fmt: skip
    for key in ("k1", "k2"):
        assert rest.read(f"{app}/x", key).json()["namespace"] == f"{app}/x"
    for params in ({}, {"recursive": "true"}):
        listed = rest.list(f"{app}/x", **params).json()["entries"]
        assert sorted(e["key"] for e in listed) == ["k1", "k2"]
    cleared = rest.request("DELETE", f"{app}/x/entries")
    assert cleared.headers["X-Deleted-Count"] == "2"


def test_a_lone_string_tag_reads_as_the_tag_it_matches(rest: Rest, url: str) -> None:
    """``tags: "x"`` written over JSON-RPC: the ``tag`` filter matches it, and the entry
    shows it, so a filtered list never returns an entry without the tag it asked for."""
    app = uid("app")
    rpc(url, "memory/remember", {"records": [
        {"content": "one", "key": f"{app}/s", "metadata": {"tags": "x"}},
        {"content": "two", "key": f"{app}/n", "metadata": {"tags": 5}},
    ]})  # fmt: skip
    (entry,) = rest.list(app, tag="x").json()["entries"]
    assert (entry["key"], entry["meta"]["tags"]) == ("s", ["x"])
    assert rest.read(app, "n").json()["meta"]["tags"] == []
