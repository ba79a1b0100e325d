"""A2MMemory: what ConversationBufferMemory and ConversationBufferWindowMemory return, kept
in A2M, with relevant memories from any framework beside the transcript."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_classic.memory import ConversationBufferMemory, ConversationBufferWindowMemory
from langchain_core.documents import Document
from langchain_support import WordEmbeddings, counting, deprecated_baseline

from a2m import A2MClient, AsyncA2MClient
from a2m.adapter import A2MAdapter
from a2m_langchain import A2MMemory, A2MVectorStore

TURNS = [
    ({"input": "hi, I am Ada"}, {"output": "hello Ada"}),
    ({"input": "I live in Lyon"}, {"output": "noted"}),
    ({"input": "what is my name?"}, {"output": "Ada"}),
]

SETTINGS: list[dict[str, Any]] = [
    {},
    {"return_messages": True},
    {"human_prefix": "User", "ai_prefix": "Bot"},
    {"memory_key": "chat_history", "return_messages": True},
    {"input_key": "question", "output_key": "answer"},
]


def _classic(window: int | None, **settings: Any) -> Any:
    with deprecated_baseline():
        if window is None:
            return ConversationBufferMemory(**settings)
        return ConversationBufferWindowMemory(k=window, **settings)


def _turns(settings: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    if "input_key" not in settings:
        return TURNS
    # several inputs and outputs: the keys decide which are the turn
    return [
        ({"question": q["input"], "context": "x"}, {"answer": a["output"], "extra": "y"})
        for q, a in TURNS
    ]


@pytest.mark.parametrize("window", [None, 0, 1, 2, 5])
@pytest.mark.parametrize("settings", SETTINGS)
def test_side_by_side_with_the_classic_buffer_memories(
    client: A2MClient, settings: dict[str, Any], window: int | None
) -> None:
    ours = A2MMemory(client=client, session_id="conv-1", k=window, **settings)
    theirs = _classic(window, **settings)
    assert ours.memory_variables == theirs.memory_variables
    probe = {"input": "next", "question": "next"}
    assert ours.load_memory_variables(probe) == theirs.load_memory_variables(probe)
    for inputs, outputs in _turns(settings):
        ours.save_context(inputs, outputs)
        theirs.save_context(inputs, outputs)
        assert ours.load_memory_variables(probe) == theirs.load_memory_variables(probe)
    ours.clear()
    theirs.clear()
    assert ours.load_memory_variables(probe) == theirs.load_memory_variables(probe)


async def test_side_by_side_async(aclient: AsyncA2MClient) -> None:
    ours = A2MMemory(client=aclient, session_id="conv-1", k=2, return_messages=True)
    theirs = _classic(2, return_messages=True)
    for inputs, outputs in TURNS:
        await ours.asave_context(inputs, outputs)
        await theirs.asave_context(inputs, outputs)
        assert await ours.aload_memory_variables({}) == await theirs.aload_memory_variables({})
    await ours.aclear()
    assert await ours.aload_memory_variables({}) == {"history": []}


def test_key_errors_match_the_classic_memories(client: A2MClient) -> None:
    ours = A2MMemory(client=client, session_id="conv-1")
    theirs = _classic(None)
    for memory in (ours, theirs):
        with pytest.raises(ValueError, match="One input key expected"):
            memory.save_context({"a": 1, "b": 2}, {"output": "x"})
        with pytest.raises(ValueError, match="multiple output keys"):
            memory.save_context({"input": "x"}, {"a": "1", "b": "2"})
    assert ours.load_memory_variables({}) == {"history": ""}


def test_save_context_is_one_remember_of_one_group(
    client: A2MClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = A2MMemory(client=client, session_id="conv-7", namespace="app/assistant", agent="ada")
    memory.save_context(*TURNS[0])  # the first call also describes
    with counting(monkeypatch, client) as calls:
        memory.save_context(*TURNS[1])
        assert dict(calls) == {"remember": 1}
        memory.load_memory_variables({})
        assert dict(calls) == {"remember": 1, "timeline": 1}
    records = client.timeline(where={"session": "conv-7"}).records
    assert [(r.role, r.content) for r in records] == [
        ("user", "hi, I am Ada"),
        ("assistant", "hello Ada"),
        ("user", "I live in Lyon"),
        ("assistant", "noted"),
    ]
    assert records[0].group == records[1].group
    assert records[2].group == records[3].group != records[0].group
    assert {r.tier for r in records} == {"episodic"}
    assert {(r.metadata or {})["source_framework"] for r in records} == {"langchain"}


def test_clear_removes_only_this_memory(client: A2MClient) -> None:
    mine = A2MMemory(client=client, session_id="conv-1", namespace="app/a")
    neighbour = A2MMemory(client=client, session_id="conv-2", namespace="app/a")
    elsewhere = A2MMemory(client=client, session_id="conv-1", namespace="app/b")
    for memory in (mine, neighbour, elsewhere):
        memory.save_context(*TURNS[0])
    mine.clear()
    assert mine.load_memory_variables({}) == {"history": ""}
    assert neighbour.load_memory_variables({})["history"] == "Human: hi, I am Ada\nAI: hello Ada"
    assert elsewhere.load_memory_variables({})["history"] == "Human: hi, I am Ada\nAI: hello Ada"


def _seed_other_frameworks(client: A2MClient) -> None:
    client.remember(
        {"content": "Ada prefers tea over coffee", "role": "memory", "metadata": {"by": "raw"}}
    )
    crew = A2MAdapter(client, "crew/research", source_framework="crewai", agent="researcher")
    crew.write("ada-city", "semantic", "Ada moved to Lyon in 2024")
    client.remember({"content": "the deploy key rotates every 90 days", "role": "memory"})


def test_relevant_memories_come_from_every_framework(client: A2MClient) -> None:
    _seed_other_frameworks(client)
    memory = A2MMemory(
        client=client, session_id="conv-1", relevant_key="facts", relevant_k=2, return_docs=True
    )
    memory.save_context({"input": "Ada tea Lyon"}, {"output": "Ada tea Lyon"})  # not a fact
    loaded = memory.load_memory_variables({"input": "what does Ada drink, and where is Lyon?"})
    assert loaded["history"] == "Human: Ada tea Lyon\nAI: Ada tea Lyon"
    facts: list[Document] = loaded["facts"]
    by_text = {doc.page_content: doc.metadata for doc in facts}
    assert set(by_text) == {"Ada prefers tea over coffee", "Ada moved to Lyon in 2024"}
    crew = by_text["Ada moved to Lyon in 2024"]
    assert crew["source_framework"] == "crewai"
    assert crew["source_agent"] == "researcher"
    assert crew["namespace"] == "crew/research"
    assert crew["key"] == "crew/research/ada-city"
    assert isinstance(crew["score"], float)
    raw = by_text["Ada prefers tea over coffee"]
    assert raw["metadata"] == {"by": "raw"}
    assert raw["role"] == "memory"
    assert raw["source_framework"] is None
    assert all(doc.id == doc.metadata["id"] for doc in facts)


async def test_relevant_memories_async_as_text_and_by_namespace(
    client: A2MClient, aclient: AsyncA2MClient
) -> None:
    _seed_other_frameworks(client)
    memory = A2MMemory(
        client=aclient,
        session_id="conv-1",
        relevant_key="facts",
        relevant_namespaces=["crew/research"],
    )
    assert memory.memory_variables == ["history", "facts"]
    loaded = await memory.aload_memory_variables({"input": "where does Ada live?"})
    assert loaded == {"history": "", "facts": "Ada moved to Lyon in 2024"}


def test_a2m_memory_needs_a_client() -> None:
    with pytest.raises(TypeError, match="A2MClient"):
        A2MMemory(session_id="conv-1")


def test_with_embeddings_messages_carry_vectors_and_lookup_is_semantic(
    client: A2MClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    embeddings = WordEmbeddings()
    store = A2MVectorStore(embeddings, client, namespace="notes")
    store.add_texts(["my cat is a lovely pet animal"])
    memory = A2MMemory(
        client=client,
        session_id="conv-1",
        relevant_key="facts",
        relevant_k=1,
        embeddings=embeddings,
    )
    memory.save_context({"input": "tea or coffee?"}, {"output": ""})
    records = client.timeline(where={"session": "conv-1"}).records
    stored = client.timeline(where={"session": "conv-1"}, embeddings=True).records
    assert [r.embedding for r in stored] == [embeddings.embed_query("tea or coffee?"), None]
    assert records[1].content == ""  # an empty answer has no vector, and is still kept
    asked: list[dict[str, Any]] = []
    recall = client.recall

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs)
        return recall(*args, **kwargs)

    monkeypatch.setattr(client, "recall", spy)
    loaded = memory.load_memory_variables({"input": "which dog or cat?"})
    assert loaded["facts"] == "my cat is a lovely pet animal"
    # by words and by vector at once
    assert asked[0]["query"] == "which dog or cat?"
    assert asked[0]["embedding"] == embeddings.embed_query("which dog or cat?")


async def test_with_embeddings_async(aclient: AsyncA2MClient) -> None:
    embeddings = WordEmbeddings()
    await A2MVectorStore(embeddings, aclient, namespace="notes").aadd_texts(["tea is a drink"])
    memory = A2MMemory(
        client=aclient, session_id="c", relevant_key="facts", relevant_k=1, embeddings=embeddings
    )
    await memory.asave_context({"input": "hello"}, {"output": "hi"})
    loaded = await memory.aload_memory_variables({"input": "a hot drink, tea?"})
    assert loaded == {"history": "Human: hello\nAI: hi", "facts": "tea is a drink"}
