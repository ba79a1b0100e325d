"""The contract's checks, written once for sync and async adapters alike (see
:mod:`._driver` for how their calls are made), and the data they write."""

from __future__ import annotations

from typing import Any

from ._driver import Handle, Scenario
from ._entries import as_entry, as_hits, check_entry, instant, same_json

__all__ = ["FAR", "JSON_VALUES", "MIDDLE", "NEAR", "TYPE_EXAMPLES"]

NEAR = [1.0, 0.0, 0.0]
"""The query vector in every similarity scenario, and the entry closest to it."""
MIDDLE = [0.6, 0.8, 0.0]
"""Cosine 0.6 to :data:`NEAR`."""
FAR = [-1.0, 0.0, 0.0]
"""Cosine -1 to :data:`NEAR`: last by any score, and below ``min_score=0.5`` whether a
store reports cosine itself or maps it onto ``[0, 1]``."""

JSON_VALUES: dict[str, Any] = {
    "string": "Build a real-time translation pipeline",
    "empty-string": "",
    "unicode": "Grüße aus 東京 — naïve café 🚀",
    "integer": 42,
    "negative": -7,
    "float": 3.5,
    "true": True,
    "false": False,
    "null": None,
    "list": [1, "two", None, True, {"three": 3}],
    "empty-list": [],
    "object": {"city": "Lisbon", "visits": 3, "tags": ["sun"], "nested": {"ok": True}},
    "empty-object": {},
}
"""A value of every JSON kind, by the test id it runs under."""

TYPE_EXAMPLES: dict[str, Any] = {
    "working": "draft the reply to ticket 42",
    "episodic": {"event": "the user asked about pricing", "turn": 3},
    "semantic": "The user prefers metric units",
    "procedural": ["open the dashboard", "click export", "choose CSV"],
    "external": "https://example.com/reports/q3.pdf",
}
"""A fitting value for each of the draft's five memory types (§6.2)."""

# --- writing and reading ------------------------------------------------------------------


def write_returns_the_entry(adapter: Handle) -> Scenario:
    written = yield adapter.write("user/goal", "semantic", "Ship the translator", NEAR)
    check_entry(
        written,
        key="user/goal",
        namespace=adapter.namespace,
        type="semantic",
        value="Ship the translator",
        embedding=NEAR,
    )


def read_returns_the_written_entry(adapter: Handle) -> Scenario:
    meta = {"tags": ["user", "goal"], "source_framework": "a2m-testing"}
    written = as_entry((yield adapter.write("user/goal", "semantic", "Ship it", NEAR, meta)))
    read = yield adapter.read("user/goal")
    assert read is not None, "read returns the entry just written, not None"
    found = check_entry(
        read,
        key="user/goal",
        namespace=adapter.namespace,
        type="semantic",
        value="Ship it",
        embedding=NEAR,
    )
    for name in ("id", "key", "namespace", "type", "value", "embedding"):
        assert same_json(found[name], written[name]), (
            f"{name}: read {found[name]!r}, wrote {written[name]!r}"
        )
    for name in ("source_agent", "source_framework", "tags", "ttl_s", "confidence"):
        assert same_json(found["meta"][name], written["meta"][name]), f"meta.{name} differs"
    assert instant(found["meta"]["created_at"]) == instant(written["meta"]["created_at"])


def read_of_a_missing_key_is_none(adapter: Handle) -> Scenario:
    assert (yield adapter.read("never/written")) is None, "a key never written reads as None"


def upsert_keeps_id_and_created_at(adapter: Handle) -> Scenario:
    first = as_entry((yield adapter.write("user/city", "semantic", "Paris")))
    second = as_entry((yield adapter.write("user/city", "semantic", "Lisbon")))
    assert second["id"] == first["id"], "an upsert keeps the entry's id (draft §5.4)"
    assert instant(second["meta"]["created_at"]) == instant(first["meta"]["created_at"]), (
        "an upsert keeps created_at (draft §5.4)"
    )
    assert instant(second["meta"]["updated_at"]) >= instant(first["meta"]["updated_at"])
    read = as_entry((yield adapter.read("user/city")))
    assert read["value"] == "Lisbon", "the upsert replaced the value"
    assert read["id"] == first["id"]


def value_round_trips(adapter: Handle, value: Any) -> Scenario:
    written = yield adapter.write("value", "semantic", value)
    check_entry(written, key="value", namespace=adapter.namespace, type="semantic", value=value)
    read = yield adapter.read("value")
    check_entry(read, key="value", namespace=adapter.namespace, type="semantic", value=value)


def memory_type_round_trips(adapter: Handle, memory_type: str) -> Scenario:
    value = TYPE_EXAMPLES[memory_type]
    written = yield adapter.write("typed", memory_type, value)
    check_entry(written, key="typed", namespace=adapter.namespace, type=memory_type, value=value)
    read = yield adapter.read("typed")
    check_entry(read, key="typed", namespace=adapter.namespace, type=memory_type, value=value)


def embedding_round_trips(adapter: Handle) -> Scenario:
    yield adapter.write("with", "semantic", "has a vector", [0.5, -0.25, 0.125])
    yield adapter.write("without", "semantic", "has none")
    with_vector = as_entry((yield adapter.read("with")))
    without = as_entry((yield adapter.read("without")))
    check_entry(
        with_vector,
        key="with",
        namespace=adapter.namespace,
        type="semantic",
        value="has a vector",
        embedding=[0.5, -0.25, 0.125],
    )
    assert without["embedding"] is None, "an entry written without an embedding has null"


def meta_round_trips(adapter: Handle) -> Scenario:
    meta = {
        "tags": ["user", "goal"],
        "source_agent": "planner",
        "source_framework": "a2m-testing",
        "confidence": 0.75,
        "ttl_s": 86400,
    }
    written = as_entry((yield adapter.write("user/goal", "semantic", "Ship it", meta=meta)))
    read = as_entry((yield adapter.read("user/goal")))
    for entry, how in ((written, "write"), (read, "read")):
        for name, value in meta.items():
            assert same_json(entry["meta"][name], value), (
                f"meta.{name} after {how}: {entry['meta'][name]!r}, expected {value!r}"
            )


# --- querying -------------------------------------------------------------------------


def _seed_vectors(adapter: Handle) -> Scenario:
    yield adapter.write("near", "semantic", "closest to the query", NEAR)
    yield adapter.write("far", "semantic", "opposite to the query", FAR)
    yield adapter.write("middle", "semantic", "halfway to the query", MIDDLE)
    yield adapter.write("no-vector", "semantic", "closest to the query, but has no vector")


def _keys(results: Any) -> list[str]:
    return [entry["key"] for entry, _ in as_hits(results)]


def _addresses(hits: list[tuple[dict[str, Any], float]]) -> list[tuple[str, str]]:
    return [(entry["namespace"], entry["key"]) for entry, _ in hits]


def query_ranks_by_embedding_similarity(adapter: Handle) -> Scenario:
    yield from _seed_vectors(adapter)
    hits = as_hits((yield adapter.query(NEAR)))
    keys = [entry["key"] for entry, _ in hits]
    assert keys == ["near", "middle", "far"], (
        f"most similar first, entries without an embedding left out; got {keys}"
    )
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True), f"scores descend: {scores}"
    entry, _ = hits[0]
    check_entry(
        entry,
        key="near",
        namespace=adapter.namespace,
        type="semantic",
        value="closest to the query",
        embedding=NEAR,
    )


def query_honours_top_k(adapter: Handle) -> Scenario:
    yield from _seed_vectors(adapter)
    assert _keys((yield adapter.query(NEAR, top_k=2))) == ["near", "middle"]
    assert _keys((yield adapter.query(NEAR, top_k=1))) == ["near"]


def query_honours_min_score(adapter: Handle) -> Scenario:
    yield from _seed_vectors(adapter)
    hits = as_hits((yield adapter.query(NEAR, min_score=0.5)))
    assert [entry["key"] for entry, _ in hits] == ["near", "middle"], hits
    assert all(score >= 0.5 for _, score in hits), f"every score is at least min_score: {hits}"


def query_honours_type(adapter: Handle) -> Scenario:
    yield adapter.write("fact", "semantic", "the sky is blue", NEAR)
    yield adapter.write("howto", "procedural", "open the valve, then the tap", NEAR)
    yield adapter.write("log", "episodic", "the user asked about the sky", MIDDLE)
    assert _keys((yield adapter.query(NEAR, type="procedural"))) == ["howto"]
    assert _keys((yield adapter.query(NEAR, type="semantic"))) == ["fact"]


def query_honours_tags(adapter: Handle) -> Scenario:
    yield adapter.write("alpha", "semantic", "tagged alpha", NEAR, {"tags": ["alpha"]})
    yield adapter.write("beta", "semantic", "tagged beta", MIDDLE, {"tags": ["beta"]})
    yield adapter.write("both", "semantic", "tagged both", FAR, {"tags": ["alpha", "beta"]})
    assert _keys((yield adapter.query(NEAR, tags=["beta"]))) == ["beta", "both"]
    assert _keys((yield adapter.query(NEAR, tags=["alpha"]))) == ["alpha", "both"]


def query_by_text(adapter: Handle) -> Scenario:
    yield adapter.write("deploy", "semantic", "the deploy key rotates every ninety days")
    yield adapter.write("lunch", "semantic", "lunch is served at noon in the canteen")
    keys = _keys((yield adapter.query(text="deploy key")))
    assert keys, "a text query finds the entry holding its words"
    assert keys[0] == "deploy", f"the entry about the deploy key comes first: {keys}"


# --- deleting -------------------------------------------------------------------------


def delete_removes_the_entry(adapter: Handle) -> Scenario:
    yield adapter.write("temp", "working", "scratch", NEAR)
    assert (yield adapter.delete("temp")) is None, "delete returns None"
    assert (yield adapter.read("temp")) is None, "a deleted entry no longer reads"
    assert "temp" not in _keys((yield adapter.query(NEAR))), "nor is it found by query"


def delete_of_a_missing_key_is_not_an_error(adapter: Handle) -> Scenario:
    assert (yield adapter.delete("never/written")) is None
    yield adapter.write("once", "semantic", "deleted twice")
    yield adapter.delete("once")
    assert (yield adapter.delete("once")) is None, "deleting again is not an error"


# --- namespaces -----------------------------------------------------------------------


def _beneath(adapter: Handle, other: Handle) -> str:
    """``adapter``'s namespace relative to ``other``'s, which must contain it."""
    assert adapter.namespace.startswith(other.namespace + "/"), (
        f"other_adapter must be scoped to a namespace above the adapter's (e.g. 'acme/wf-1' "
        f"for 'acme/wf-1/agent-a'), not {other.namespace!r} for {adapter.namespace!r}"
    )
    return adapter.namespace[len(other.namespace) + 1 :]


def writes_stay_in_their_namespace(adapter: Handle, other: Handle) -> Scenario:
    _beneath(adapter, other)
    mine = as_entry((yield adapter.write("note", "semantic", "the agent's note")))
    theirs = as_entry((yield other.write("note", "semantic", "the workflow's note")))
    assert mine["namespace"] == adapter.namespace
    assert theirs["namespace"] == other.namespace
    assert mine["id"] != theirs["id"], "the same key in two namespaces is two entries"
    assert as_entry((yield adapter.read("note")))["value"] == "the agent's note"
    assert as_entry((yield other.read("note")))["value"] == "the workflow's note"


def reads_cross_namespaces(adapter: Handle, other: Handle) -> Scenario:
    """A namespace scopes an adapter's writes and deletes, never its reads: shared memory
    only works if what one agent wrote, in its namespace, is found from any other."""
    _beneath(adapter, other)
    yield adapter.write("fact", "semantic", "written beneath, found from above", NEAR)
    yield other.write("brief", "semantic", "written above, found from beneath", MIDDLE)
    mine, theirs = (adapter.namespace, "fact"), (other.namespace, "brief")

    hits = as_hits((yield other.query(NEAR)))
    found = _addresses(hits)
    assert mine in found, (
        f"a query from {other.namespace!r} with no namespace argument searches every "
        f"namespace, so it finds {mine}; got {found}"
    )
    check_entry(
        hits[found.index(mine)][0],
        key="fact",
        namespace=adapter.namespace,
        type="semantic",
        value="written beneath, found from above",
        embedding=NEAR,
    )
    found = _addresses(as_hits((yield other.query(NEAR, recursive=True))))
    assert mine in found, (
        f"a recursive query from {other.namespace!r} finds {mine}, beneath it; got {found}"
    )
    found = _addresses(as_hits((yield adapter.query(NEAR))))
    assert theirs in found, (
        f"a query from {adapter.namespace!r} with no namespace argument searches every "
        f"namespace, so it finds {theirs}, above it; got {found}"
    )


def another_namespace_cannot_delete_the_entry(adapter: Handle, other: Handle) -> Scenario:
    path = _beneath(adapter, other)
    yield adapter.write("note", "semantic", "the agent's note")
    assert (yield other.delete("note")) is None
    assert (yield other.delete(f"{path}/note")) is None
    kept = yield adapter.read("note")
    assert kept is not None, (
        f"an adapter scoped to {other.namespace!r} deleted an entry of {adapter.namespace!r}"
    )
