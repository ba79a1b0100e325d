"""An A2E agent and an adapter-contract reader (``a2m.adapter``, the base of every framework
adapter) on one store read each other's entries, on every binding."""

from __future__ import annotations

from a2e_support import NAMESPACE, Backend, entry

from a2m.adapter import A2MAdapter


def test_a_contract_reader_reads_what_an_a2e_agent_stored(cell: tuple[str, Backend]) -> None:
    mode, backend = cell
    host = backend.host(mode)
    memory = host.init("assistant")
    content = {"language": "python", "style": "concise"}
    host.store(
        memory,
        entry(
            {"agent": "a1", "topic": "prefs"},
            content,
            tags=["preferences"],
            score=0.9,
            source="turn-1",
        ),
        entry({"agent": "a1", "topic": "name"}, "Ada", tags=["profile"]),
    )
    reader = A2MAdapter(backend.sync_client(), NAMESPACE, source_framework="langgraph")
    read = reader.read("agent=a1,topic=prefs")
    assert read is not None
    assert (read.value, read.type, read.namespace) == (content, "episodic", NAMESPACE)
    assert read.meta.tags == ["preferences"]
    assert read.meta.confidence == 0.9
    assert (read.meta.source_framework, read.meta.source_agent) == ("a2e", "assistant")
    name = reader.read("agent=a1,topic=name")
    assert name is not None
    assert name.value == "Ada"
    hits = reader.query(text="preferences", top_k=5)
    assert [hit.entry.key for hit in hits] == ["agent=a1,topic=prefs"]


def test_an_a2e_agent_reads_what_a_contract_writer_stored(cell: tuple[str, Backend]) -> None:
    mode, backend = cell
    writer = A2MAdapter(
        backend.sync_client(), NAMESPACE, source_framework="crewai", agent="assistant"
    )
    writer.write("user/city", "semantic", {"city": "Paris"}, meta={"tags": ["geo"]})
    writer.write("notes/today", "episodic", "met Grace about the compiler", meta={"tags": ["geo"]})
    host = backend.host(mode)
    memory = host.init("assistant")
    found = host.retrieve(memory, query="Paris")
    assert found["total"] == 1
    (city,) = found["entries"]
    assert city["key"] == {"a2m_key": f"{NAMESPACE}/user/city"}
    assert (city["content"], city["tier"], city["tags"]) == ({"city": "Paris"}, "semantic", ["geo"])
    listed = host.retrieve(memory, tags=["geo"], tier="episodic")
    assert [e["content"] for e in listed["entries"]] == ["met Grace about the compiler"]
    stranger = host.init("someone-else")  # the episodic note is the assistant's own
    assert [e["tier"] for e in host.retrieve(stranger, tags=["geo"])["entries"]] == ["semantic"]


def test_an_entry_rewritten_by_the_contract_reads_back_in_a2e(cell: tuple[str, Backend]) -> None:
    mode, backend = cell
    host = backend.host(mode)
    memory = host.init("assistant")
    host.store(memory, entry({"topic": "plan"}, {"step": 1}, tags=["plan"]))
    adapter = A2MAdapter(
        backend.sync_client(), NAMESPACE, source_framework="autogen", agent="assistant"
    )
    adapter.write("topic=plan", "episodic", {"step": 2}, meta={"tags": ["plan"]})
    (got,) = host.retrieve(memory, keys=[{"topic": "plan"}])["entries"]
    assert (got["content"], got["tags"]) == ({"step": 2}, ["plan"])
