"""The seed's tiers: working entries belong to one memory session and vanish when it ends
(the agent disconnects, or the A2M session is closed); episodic entries are the agent's
own across sessions; semantic entries are everyone's."""

from __future__ import annotations

from a2e_support import NAMESPACE, Backend, entry, keys_of


def test_after_a_disconnect_working_entries_are_gone_and_the_rest_remain(
    cell: tuple[str, Backend],
) -> None:
    mode, backend = cell
    first = backend.host(mode, semantic_writers=["assistant"])
    memory = first.init("assistant")
    first.store(
        memory,
        entry({"k": "scratch"}, "half a thought", "working", tags=["t"]),
        entry({"k": "mine"}, "the agent's own", "episodic", tags=["t"]),
        entry({"k": "ours"}, "known to all", "semantic", tags=["t"]),
    )
    assert first.retrieve(memory, tags=["t"])["total"] == 3
    first.disconnect()
    assert first.retrieve(memory, tags=["t"])["code"] == "unknown_memory"

    second = backend.host(mode)
    again = second.init("assistant")
    assert sorted(e["key"]["k"] for e in second.retrieve(again, tags=["t"])["entries"]) == [
        "mine",
        "ours",
    ]
    assert second.retrieve(again, keys=[{"k": "scratch"}])["code"] == "memory_not_found"
    other = second.init("someone-else")
    assert keys_of(second.retrieve(other, tags=["t"])) == [{"k": "ours"}]
    # Gone from the store, not merely hidden: no record of it is left for any reader.
    reader = backend.sync_client()
    left = reader.timeline(limit=100, key_prefix=NAMESPACE + "/").records
    assert sorted(record.key for record in left) == [f"{NAMESPACE}/k=mine", f"{NAMESPACE}/k=ours"]


def test_working_entries_are_one_memory_sessions_only(cell: tuple[str, Backend]) -> None:
    mode, backend = cell
    host = backend.host(mode)
    one, two = host.init("assistant"), host.init("assistant")
    host.store(one, entry({"k": "scratch"}, "one's notes", "working"))
    host.store(one, entry({"k": "fact"}, "kept", "episodic"))
    assert host.retrieve(two, keys=[{"k": "scratch"}])["code"] == "memory_not_found"
    assert keys_of(host.retrieve(two, tags=[])) == [{"k": "fact"}]
    assert host.forget(two, keys=[{"k": "scratch"}], tier="working")["code"] == "memory_not_found"
    host.end_memory(one)
    assert keys_of(host.retrieve(two, tags=[])) == [{"k": "fact"}]


def test_closing_the_a2m_session_ends_the_working_tier(make_backend: object) -> None:
    backend = make_backend("in-process")  # type: ignore[operator]
    host = backend.host("sync")
    memory = host.init("assistant")
    host.store(
        memory,
        entry({"k": "scratch"}, "notes", "working", tags=["t"]),
        entry({"k": "fact"}, "kept", "episodic", tags=["t"]),
    )
    # Another A2M client ends the conversation the memory session is.
    backend.sync_client().close_session(memory, owner="assistant")
    assert keys_of(host.retrieve(memory, tags=["t"])) == [{"k": "fact"}]
    assert host.retrieve(memory, keys=[{"k": "scratch"}])["code"] == "memory_not_found"
    host.end_memory(memory)  # and ending the memory session deletes what the close moved
    reader = backend.sync_client()
    assert [r.key for r in reader.timeline(limit=100).records] == [f"{NAMESPACE}/k=fact"]


def test_expired_entries_are_gone(make_backend: object) -> None:
    import time

    backend = make_backend("in-process")  # type: ignore[operator]
    host = backend.host("sync")
    memory = host.init()
    host.store(memory, entry({"k": "brief"}, "soon gone", ttl=1), entry({"k": "kept"}, "stays"))
    assert host.retrieve(memory, tags=[])["total"] == 2
    time.sleep(1.2)
    assert keys_of(host.retrieve(memory, tags=[])) == [{"k": "kept"}]
    assert host.retrieve(memory, keys=[{"k": "brief"}])["code"] == "memory_not_found"


def test_a_working_entry_never_replaces_a_durable_one_at_its_key(
    cell: tuple[str, Backend],
) -> None:
    """A key names one entry of an agent whatever its tier: a working entry stored there
    would replace the episodic one, and the session's end would delete it. Refused,
    naming the tier held; the durable entry outlives the session."""
    mode, backend = cell
    host = backend.host(mode, semantic_writers=["assistant"])
    memory = host.init("assistant")
    host.store(memory, entry({"topic": "prefs"}, {"language": "python"}, "episodic"))
    host.store(memory, entry({"topic": "shared"}, "known to all", "semantic"))
    answer = host.store(
        memory,
        entry({"topic": "prefs"}, "scratch", "working"),
        entry({"topic": "shared"}, "scratch", "working"),
        entry({"topic": "fresh"}, "scratch", "working"),
    )
    assert answer["stored"] == [{"topic": "fresh"}]
    assert [e.split(":")[0] for e in answer["errors"]] == ["entries[0]", "entries[1]"]
    assert "holds the agent's episodic entry" in answer["errors"][0]
    host.end_memory(memory)
    again = host.init("assistant")
    kept = host.retrieve(again, keys=[{"topic": "prefs"}])["entries"]
    assert [(e["content"], e["tier"]) for e in kept] == [({"language": "python"}, "episodic")]
