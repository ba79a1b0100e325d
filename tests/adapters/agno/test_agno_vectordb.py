"""A2MVectorDb under Agno's Knowledge, over HTTP: chunks are entries every framework can
recall, caller vectors are stored verbatim, search filters and every delete work, the
async half runs on the async client."""

from __future__ import annotations

import pytest
from agno.agent import Agent
from agno.filters import EQ, GT, IN, NOT, OR
from agno.knowledge.document import Document
from agno.knowledge.knowledge import Knowledge
from agno_fake_embedder import FakeEmbedder, embed
from agno_fake_model import FakeModel

from a2m import A2MClient, AsyncA2MClient
from a2m.adapter import A2MAdapter
from a2m_agno import A2MVectorDb

CATS = "Cats purr when they are content. Tabby cats are common house cats."
RUST = "Rust has a borrow checker that prevents data races at compile time."


def chunk(text: str, **meta: object) -> Document:
    return Document(content=text, name=str(meta.pop("name", "doc")), meta_data=dict(meta))


def test_knowledge_ingests_chunks_every_framework_recalls(client: A2MClient) -> None:
    vectors = A2MVectorDb(client, embedder=FakeEmbedder())
    knowledge = Knowledge(vector_db=vectors)
    knowledge.insert(name="cats", text_content=CATS, metadata={"kind": "pets"})
    knowledge.insert(name="rust", text_content=RUST, metadata={"kind": "code"})

    found = knowledge.search("borrow checker")
    assert found[0].name == "rust"
    assert found[0].embedding == embed(RUST)  # the embedder's vector, verbatim
    assert [d.name for d in vectors.search("cats purr", limit=1)] == ["cats"]

    other = A2MAdapter(client, "langchain", source_framework="langchain")
    hits = other.query(text="borrow checker")
    assert hits[0].entry.value == RUST
    assert hits[0].entry.namespace == "agno/knowledge"
    assert hits[0].entry.meta.source_framework == "agno"
    assert hits[0].entry.embedding == embed(RUST)
    by_vector = other.query(embedding=embed("tabby cats"), top_k=1)
    assert by_vector[0].entry.value == CATS


def test_caller_embeddings_are_stored_verbatim(client: A2MClient) -> None:
    vectors = A2MVectorDb(client)  # no embedder: the caller's vectors, text search
    odd = [0.1, -1e-7, 3.25, 0.0, 123456.789, -0.5]
    vectors.insert("h1", [Document(content="an odd vector", embedding=odd, name="odd")])
    entry = A2MAdapter(client, "reader").list(namespace="agno/knowledge").entries[0]
    assert entry.embedding == odd
    assert vectors.search("odd vector")[0].embedding == odd
    assert vectors.get_supported_search_types() == ["vector", "keyword", "hybrid"]
    with pytest.raises(ValueError, match="embedder"):
        A2MVectorDb(client, search_type="vector")


def test_search_filters_and_owners(client: A2MClient) -> None:
    vectors = A2MVectorDb(client, embedder=FakeEmbedder())
    vectors.insert(
        "h1",
        [
            chunk("cats nap in the sun", name="a", kind="pets", year=2020),
            chunk("cats chase mice", name="b", kind="pets", year=2024),
            chunk("cats and dogs in code", name="c", kind="code", year=2023),
        ],
    )
    vectors.insert(
        "h2", [chunk("cats of alice", name="d", kind="pets", year=2025)], user_id="alice"
    )

    def names(**kwargs: object) -> set[str]:
        return {d.name or "" for d in vectors.search("cats", limit=10, **kwargs)}  # type: ignore[arg-type]

    assert names() == {"a", "b", "c", "d"}
    assert names(filters={"kind": "pets"}) == {"a", "b", "d"}
    assert names(filters={"kind": "pets"}, user_id="bob") == {"a", "b"}
    assert names(user_id="alice") == {"a", "b", "c", "d"}
    assert names(filters=[GT("year", 2021)]) == {"b", "c", "d"}
    assert names(filters=[OR(EQ("kind", "code"), IN("year", [2020]))]) == {"a", "c"}
    assert names(filters=[NOT(EQ("kind", "pets"))]) == {"c"}
    assert len(vectors.search("cats", limit=2)) == 2


def test_upsert_exists_and_every_delete(client: A2MClient) -> None:
    vectors = A2MVectorDb(client, embedder=FakeEmbedder())
    vectors.create()
    assert vectors.exists()
    first = [chunk(f"part {i} of the manual", name="manual", part=i) for i in range(3)]
    for document in first:
        document.content_id = "content-1"
    vectors.insert("hash-1", first)
    assert vectors.content_hash_exists("hash-1")
    assert not vectors.content_hash_exists("hash-1", user_id="alice")
    assert vectors.name_exists("manual")
    stored_ids = [d.id or "" for d in vectors.search("manual", limit=10)]
    assert len(stored_ids) == 3
    assert all(vectors.id_exists(i) for i in stored_ids)

    vectors.upsert("hash-1", [chunk("part 0 of the manual", name="manual", part=0)])
    assert [d.content for d in vectors.search("manual", limit=10)] == ["part 0 of the manual"]

    vectors.insert("hash-2", [chunk("a recipe for bread", name="recipe", course="main")])
    vectors.insert("hash-3", [chunk("a recipe for cake", name="cake", course="dessert")])
    assert vectors.delete_by_metadata({"course": "dessert"})
    assert not vectors.name_exists("cake")
    assert not vectors.delete_by_metadata({"course": "none"})
    assert vectors.delete_by_name("recipe")
    assert not vectors.name_exists("recipe")
    survivor = vectors.search("manual", limit=1)[0]
    assert vectors.delete_by_id(survivor.id or "")
    assert not vectors.id_exists(survivor.id or "")

    mine = chunk("alice's notes", name="notes")
    mine.content_id = "content-2"
    shared = chunk("shared notes", name="notes")
    shared.content_id = "content-2"
    vectors.insert("hash-4", [mine], user_id="alice")
    vectors.insert("hash-4", [shared])
    assert vectors.delete_by_content_id("content-2", user_id="alice")
    assert [d.content for d in vectors.search("notes", limit=10)] == ["shared notes"]
    assert vectors.delete_by_content_id("content-2")

    vectors.insert("hash-5", [chunk("to be dropped")])
    other = A2MAdapter(client, "keep")
    other.write("fact", "semantic", "another framework's entry")
    vectors.drop()
    assert vectors.search("dropped") == []
    assert other.read("fact") is not None
    assert vectors.delete()


@pytest.mark.anyio
async def test_the_async_half_runs_on_the_async_client(
    client: A2MClient, async_client: AsyncA2MClient
) -> None:
    # Agno's async ingest still asks the sync content_hash_exists (VectorDb has no twin).
    vectors = A2MVectorDb(client, async_client=async_client, embedder=FakeEmbedder())
    knowledge = Knowledge(vector_db=vectors)
    await knowledge.ainsert(name="rust", text_content=RUST, metadata={"kind": "code"})
    await vectors.async_insert("h", [chunk("cats purr", name="cats", kind="pets")])
    assert await vectors.async_exists()
    assert await vectors.async_name_exists("rust")
    found = await vectors.async_search("borrow checker", filters={"kind": "code"})
    assert [d.name for d in found] == ["rust"]
    await vectors.async_upsert("h", [chunk("cats sleep", name="cats", kind="pets")])
    assert [d.content for d in await vectors.async_search("cats", filters={"kind": "pets"})] == [
        "cats sleep"
    ]
    with pytest.raises(TypeError, match="sync client"):
        A2MVectorDb(async_client=async_client).search("cats")
    with pytest.raises(TypeError, match="async client"):
        await A2MVectorDb(client).async_search("cats")
    await vectors.async_drop()
    assert await vectors.async_search("cats") == []


def test_an_agent_searching_knowledge_finds_other_frameworks_documents(client: A2MClient) -> None:
    langchain = A2MAdapter(client, "langchain/docs", source_framework="langchain", agent="indexer")
    langchain.write("handbook/leave", "semantic", "Annual leave is 25 days, booked in the portal.")
    vectors = A2MVectorDb(client, include_foreign=True)
    Knowledge(vector_db=vectors).insert(name="office", text_content="The office opens at 8.")
    agent = Agent(model=FakeModel(), knowledge=Knowledge(vector_db=vectors), search_knowledge=True)

    run = agent.run("look up: annual leave days")
    assert run.content is not None
    assert run.content.startswith("found: ")
    assert "Annual leave is 25 days" in run.content
    found = vectors.search("annual leave")[0]
    assert found.meta_data["source_framework"] == "langchain"
    assert found.meta_data["source_agent"] == "indexer"
    assert found.meta_data["namespace"] == "langchain/docs"
    assert found.name == "handbook/leave"
    assert [d.name for d in vectors.search("office opens")][:1] == ["office"]
    assert [d.name for d in A2MVectorDb(client).search("annual leave")] == []


def test_a_filter_the_server_runs_finds_matches_beyond_the_best_hundred(client: A2MClient) -> None:
    vectors = A2MVectorDb(client, embedder=FakeEmbedder(), search_type="vector")
    crowd = [
        chunk(f"cats cats cats {i}", name=f"pet-{i}", kind="pets", year=2020) for i in range(120)
    ]
    rare = [
        chunk(f"cats and code {i}", name=f"code-{i}", kind="code", year=2020 + i) for i in range(3)
    ]
    vectors.insert("crowd", crowd)
    vectors.insert("rare", rare)
    found = vectors.search("cats cats cats", limit=3, filters={"kind": "code"})
    assert sorted(d.name or "" for d in found) == ["code-0", "code-1", "code-2"]
    later = vectors.search(
        "cats cats cats", limit=5, filters=[EQ("kind", "code"), GT("year", 2020)]
    )
    assert sorted(d.name or "" for d in later) == ["code-1", "code-2"]
