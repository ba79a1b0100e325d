"""Every memory message and error of seed 000, through sync and async plugins on every
binding of the bundled server (in-process, stdio, HTTP, REST)."""

from __future__ import annotations

import uuid
from typing import Any

from a2e_support import NAMESPACE, Backend, Host, entry, keys_of

from a2m_a2e import new_message

ENVELOPE = {"type": str, "id": str, "version": str, "ts": float}


def check_envelope(response: dict[str, Any], type: str, req_id: str) -> None:
    assert response["type"] == type, response
    for name, kind in ENVELOPE.items():
        assert isinstance(response[name], kind), name
    uuid.UUID(response["id"])
    assert response["version"] == "1.0"
    assert response["req_id"] == req_id


def test_init_returns_a_memory_id_bound_to_the_namespace(host: Host) -> None:
    request = new_message("memory/init/req", namespace=NAMESPACE, scope={"agent": "assistant"})
    response = host.handle(request)
    check_envelope(response, "memory/init/resp", request["id"])
    assert set(response) == {*ENVELOPE, "req_id", "memory_id", "namespace"}
    assert response["namespace"] == NAMESPACE
    uuid.UUID(response["memory_id"])
    assert host.init() != response["memory_id"]  # one memory_id per init


def test_store_then_retrieve_by_key_returns_the_exact_structure(host: Host) -> None:
    memory = host.init()
    content = {"language": "python", "style": ["concise", {"depth": 2}], "n": 1.5, "none": None}
    request = new_message(
        "memory/store/req",
        memory_id=memory,
        entries=[
            entry({"agent": "a1", "topic": "prefs"}, content, tags=["preferences"], score=0.9),
            entry({"agent": "a1", "topic": "greeting"}, "hello there", source="turn-2"),
        ],
    )
    stored = host.handle(request)
    check_envelope(stored, "memory/store/resp", request["id"])
    assert stored["stored"] == [
        {"agent": "a1", "topic": "prefs"},
        {"agent": "a1", "topic": "greeting"},
    ]
    assert stored["errors"] == []
    found = host.retrieve(memory, keys=[{"topic": "prefs", "agent": "a1"}])
    assert found["total"] == 1
    (got,) = found["entries"]
    assert got["key"] == {"agent": "a1", "topic": "prefs"}
    assert got["content"] == content
    assert (got["tier"], got["tags"], got["score"], got["ttl"], got["source"]) == (
        "episodic",
        ["preferences"],
        0.9,
        0,
        "",
    )
    assert isinstance(got["created_at"], float)
    assert isinstance(got["updated_at"], float)
    assert "embedding" not in got
    (text,) = host.retrieve(memory, keys=[{"agent": "a1", "topic": "greeting"}])["entries"]
    assert (text["content"], text["source"], text["score"]) == ("hello there", "turn-2", 1.0)


def test_key_order_does_not_matter_and_escaping_keeps_keys_apart(host: Host) -> None:
    memory = host.init()
    host.store(memory, entry({"agent": "a1", "topic": "prefs"}, "first"))
    host.store(memory, entry({"topic": "prefs", "agent": "a1"}, "second"))  # the same key
    tricky = [
        {"a": "b,c=d"},
        {"a": "b", "c": "d"},
        {"a": 1},
        {"a": "1"},
        {"a/b": "c"},
        {"a": "b/c"},
        {"a=b": "c"},
        {"a": "%2C"},
        {"a": ","},
    ]
    response = host.store(memory, *[entry(key, index) for index, key in enumerate(tricky)])
    assert response["stored"] == tricky
    assert response["errors"] == []
    listing = host.retrieve(memory, tier="episodic", limit=100)
    assert listing["total"] == len(tricky) + 1
    for index, key in enumerate(tricky):
        (got,) = host.retrieve(memory, keys=[key])["entries"]
        assert (got["key"], got["content"]) == (key, index)
    (prefs,) = host.retrieve(memory, keys=[{"agent": "a1", "topic": "prefs"}])["entries"]
    assert prefs["content"] == "second"


def test_store_refuses_bad_entries_one_by_one_and_writes_the_rest(host: Host) -> None:
    memory = host.init()
    response = host.store(
        memory,
        entry({"k": "ok1"}, "fine"),
        entry({"k": "bad-tier"}, "x", tier="archive"),
        {"key": {"k": "no-content"}, "tier": "episodic"},
        entry({}, "empty key"),
        entry({"k": "score"}, "x", score=1.5),
        entry({"k": "ttl"}, "x", ttl=-1),
        entry({"k": "tags"}, "x", tags="not-a-list"),
        entry({"k": "semantic"}, "shared", tier="semantic"),  # assistant has no grant
        entry({"k": "ok2"}, [1, 2, 3], ttl=3600),
    )
    assert response["stored"] == [{"k": "ok1"}, {"k": "ok2"}]
    assert len(response["errors"]) == 7
    assert all(isinstance(error, str) for error in response["errors"])
    assert response["errors"][0].startswith("entries[1]:")
    assert "permission_denied" in response["errors"][-1]
    found = host.retrieve(memory, keys=[{"k": "ok1"}, {"k": "ok2"}, {"k": "score"}])
    assert keys_of(found) == [{"k": "ok1"}, {"k": "ok2"}]
    assert found["entries"][1]["ttl"] == 3600


def test_retrieve_ands_tags_tier_query_and_min_score_and_counts_before_limit(host: Host) -> None:
    memory = host.init()
    host.store(
        memory,
        *[
            entry(
                {"n": n},
                f"note {n} about gardening",
                tags=["garden", "even" if n % 2 == 0 else "odd"],
                score=n / 10,
            )
            for n in range(10)
        ],
        entry({"n": "w"}, "gardening scratch", tier="working", tags=["garden"]),
    )
    both = host.retrieve(memory, tags=["garden", "even"], limit=2)
    assert both["total"] == 5
    assert len(both["entries"]) == 2
    assert all({"garden", "even"} <= set(e["tags"]) for e in both["entries"])
    assert host.retrieve(memory, tags=["garden"], tier="working")["total"] == 1
    counted = host.retrieve(memory, tags=["garden"], tier="episodic", limit=0)
    assert (counted["entries"], counted["total"]) == ([], 10)
    scored = host.retrieve(memory, tags=["garden"], min_score=0.55, tier="episodic")
    assert scored["total"] == 4
    assert all(e["score"] >= 0.55 for e in scored["entries"])
    queried = host.retrieve(memory, query="gardening", tags=["odd"], limit=3)
    assert queried["total"] == 5
    assert len(queried["entries"]) == 3
    keyed = host.retrieve(memory, keys=[{"n": 1}, {"n": 2}], tags=["odd"])
    assert keys_of(keyed) == [{"n": 1}]
    assert keyed["total"] == 1


def test_forget_by_keys_and_by_tags_within_a_tier_counts_exactly(host: Host) -> None:
    memory = host.init()
    host.store(
        memory,
        *[entry({"t": n}, f"temp {n}", tier="working", tags=["temp"]) for n in range(3)],
        entry({"t": "keep"}, "kept", tier="episodic", tags=["temp"]),
        entry({"t": "e1"}, "one", tags=["x"]),
        entry({"t": "e2"}, "two", tags=["x"]),
    )
    request = new_message("memory/forget/req", memory_id=memory, tags=["temp"], tier="working")
    response = host.handle(request)
    check_envelope(response, "memory/forget/resp", request["id"])
    assert response["deleted"] == 3
    assert host.retrieve(memory, tags=["temp"])["total"] == 1  # the episodic one stays
    assert host.forget(memory, keys=[{"t": "e1"}])["deleted"] == 1  # tier defaults to episodic
    assert host.forget(memory, keys=[{"t": "e2"}], tier="working")["code"] == "memory_not_found"
    assert host.forget(memory, keys=[{"t": "e2"}], tags=["nope"])["deleted"] == 0
    assert host.retrieve(memory, keys=[{"t": "e2"}])["total"] == 1
    assert host.forget(memory, keys=[{"t": "e1"}])["code"] == "memory_not_found"
    assert host.forget(memory)["code"] == "invalid_message"  # neither keys nor tags


def test_a_keyed_lookup_that_finds_nothing_is_memory_not_found(host: Host) -> None:
    memory = host.init()
    request = new_message("memory/retrieve/req", memory_id=memory, keys=[{"never": "written"}])
    response = host.handle(request)
    check_envelope(response, "memory/error", request["id"])
    assert (response["code"], response["retryable"]) == ("memory_not_found", False)


def test_unknown_and_ended_memory_ids_are_error_responses(host: Host) -> None:
    assert host.retrieve("not-a-memory-id")["code"] == "unknown_memory"
    memory = host.init()
    host.store(memory, entry({"k": 1}, "x", tier="working"))
    assert host.end_memory(memory) == 1
    for response in (
        host.store(memory, entry({"k": 2}, "y")),
        host.retrieve(memory, tags=[]),
        host.forget(memory, tags=["x"]),
    ):
        assert response["type"] == "memory/error"
        assert response["code"] == "unknown_memory"
    assert host.end_memory(memory) == 0  # ending twice is a no-op


def test_semantic_writes_need_the_hosts_grant_and_are_shared(cell: tuple[str, Backend]) -> None:
    mode, backend = cell
    host = backend.host(mode, semantic_writers=["curator"])
    curator, assistant = host.init("curator"), host.init("assistant")
    refused = host.store(assistant, entry({"fact": "sky"}, "blue", tier="semantic"))
    assert refused["stored"] == []
    assert "permission_denied" in refused["errors"][0]
    assert host.forget(assistant, tags=["x"], tier="semantic")["code"] == "permission_denied"
    assert host.store(curator, entry({"fact": "sky"}, "blue", tier="semantic", tags=["x"]))[
        "stored"
    ] == [{"fact": "sky"}]
    host.store(curator, entry({"private": 1}, "mine", tags=["x"]))
    seen = host.retrieve(assistant, tags=["x"])
    assert [(e["key"], e["tier"]) for e in seen["entries"]] == [({"fact": "sky"}, "semantic")]
    assert host.retrieve(curator, tags=["x"])["total"] == 2


def test_any_granted_writer_forgets_a_semantic_entry(cell: tuple[str, Backend]) -> None:
    """The semantic tier is the agents' shared knowledge: an entry one granted writer
    stored, another granted writer forgets (``deleted`` 1), and nobody sees it after."""
    mode, backend = cell
    host = backend.host(mode, semantic_writers=["curator", "editor"])
    curator, editor = host.init("curator"), host.init("editor")
    host.store(curator, entry({"fact": "sky"}, "blue", tier="semantic"))
    assert host.forget(editor, keys=[{"fact": "sky"}], tier="semantic")["deleted"] == 1
    assert host.retrieve(curator, tier="semantic")["total"] == 0


def test_two_sessions_of_one_agent_keep_their_scratch_entries_apart(host: Host) -> None:
    """A working entry is its memory session's: another open session of the same agent
    storing at that key is refused, naming why, rather than replacing it."""
    first, second = host.init("a"), host.init("a")
    assert host.store(first, entry({"k": 1}, "mine", tier="working"))["stored"] == [{"k": 1}]
    refused = host.store(second, entry({"k": 1}, "yours", tier="working"))
    assert refused["stored"] == []
    assert "another open memory session" in refused["errors"][0]
    (kept,) = host.retrieve(first, keys=[{"k": 1}])["entries"]
    assert kept["content"] == "mine"
    host.end_memory(first)
    assert host.store(second, entry({"k": 1}, "yours", tier="working"))["stored"] == [{"k": 1}]


def test_text_fields_holding_a_lone_surrogate_are_named(host: Host) -> None:
    memory = host.init()
    for fields, named in (({"tags": ["\ud800"]}, "tags"), ({"source": "\ud800"}, "source")):
        stored = host.store(memory, entry({"k": 1}, "fine", **fields))
        assert stored["stored"] == []
        assert stored["errors"][0].startswith("entries[0]: invalid_message:")
        assert named in stored["errors"][0]


def test_quota_of_entries_answers_memory_full_per_entry(cell: tuple[str, Backend]) -> None:
    mode, backend = cell
    from a2m_a2e import HostLimits

    host = backend.host(mode, limits=HostLimits(max_entries=3, max_entry_bytes=200))
    memory = host.init()
    first = host.store(memory, *[entry({"n": n}, n) for n in range(2)])
    assert len(first["stored"]) == 2
    second = host.store(memory, entry({"n": 0}, "replaced"), entry({"n": 2}, 2), entry({"n": 3}, 3))
    assert second["stored"] == [{"n": 0}, {"n": 2}]
    assert len(second["errors"]) == 1
    assert "memory_full" in second["errors"][0]
    big = host.store(memory, entry({"n": 0}, "x" * 500))
    assert big["stored"] == []
    assert "200" in big["errors"][0]
    host.forget(memory, keys=[{"n": 2}])
    assert host.store(memory, entry({"n": 3}, 3))["stored"] == [{"n": 3}]
    # A session's end frees its working entries' places, as does anything the host did
    # not count (another host, an expiry): a full namespace is counted again first.
    host.forget(memory, keys=[{"n": 3}])
    scratch = host.init()
    assert len(host.store(scratch, entry({"w": 1}, 1, tier="working"))["stored"]) == 1
    assert host.end_memory(scratch) == 1
    fresh = host.init()
    assert host.store(fresh, entry({"n": 4}, 4))["stored"] == [{"n": 4}]
    assert "memory_full" in host.store(fresh, entry({"n": 5}, 5))["errors"][0]


def test_embeddings_are_echoed_only_when_asked(host: Host) -> None:
    memory = host.init()
    vector = [0.25, 0.5, 0.75]
    response = host.store(memory, entry({"v": 1}, "with a vector", embedding=vector))
    assert response["errors"] == []
    (plain,) = host.retrieve(memory, keys=[{"v": 1}])["entries"]
    assert "embedding" not in plain
    # ``include_embeddings`` is this host's extension of the retrieve request.
    ask = {"include_embeddings": True}
    for fields in ({"query": "vector"}, {"keys": [{"v": 1}]}, {}):
        request = {**new_message("memory/retrieve/req", memory_id=memory, **fields), **ask}
        (asked,) = host.handle(request)["entries"]
        assert asked["embedding"] == vector
