"""A2MRetriever: recall as LangChain documents, lexical or semantic, reading what the raw
client and other frameworks' adapters wrote, with their provenance."""

from __future__ import annotations

import pytest
from langchain_support import WordEmbeddings, counting

from a2m import A2MClient, AsyncA2MClient
from a2m.adapter import A2MAdapter
from a2m_langchain import A2MRetriever, A2MVectorStore


def _seed(client: A2MClient) -> None:
    client.remember(
        [
            {"content": "the deploy key rotates every 90 days", "role": "memory"},
            {"content": "the office coffee machine is on floor two", "role": "user"},
        ]
    )
    crew = A2MAdapter(client, "crew/ops", source_framework="crewai", agent="ops-agent")
    crew.write("deploy-approvals", "semantic", "a deploy needs two approvals")


def test_lexical_by_default_across_frameworks_with_provenance(client: A2MClient) -> None:
    _seed(client)
    documents = A2MRetriever(client=client, k=5).invoke("deploy")
    assert {d.page_content for d in documents} == {
        "the deploy key rotates every 90 days",
        "a deploy needs two approvals",
    }
    crew = next(d for d in documents if d.page_content.startswith("a deploy"))
    assert crew.metadata["source_framework"] == "crewai"
    assert crew.metadata["source_agent"] == "ops-agent"
    assert crew.metadata["namespace"] == "crew/ops"
    assert crew.metadata["key"] == "crew/ops/deploy-approvals"
    assert crew.id == crew.metadata["id"]
    scores = [d.metadata["score"] for d in documents]
    assert scores == sorted(scores, reverse=True)


def test_k_filter_namespaces_and_key_prefix(client: A2MClient) -> None:
    _seed(client)
    retriever = A2MRetriever(client=client)
    assert len(retriever.invoke("deploy", k=1)) == 1
    assert [d.page_content for d in retriever.invoke("deploy", filter={"role": "memory"})] == [
        "the deploy key rotates every 90 days"
    ]
    only_crew = A2MRetriever(client=client, namespaces=["crew/ops"]).invoke("deploy")
    assert [d.page_content for d in only_crew] == ["a deploy needs two approvals"]
    by_key = A2MRetriever(client=client, key_prefix="crew").invoke("deploy")
    assert [d.metadata["key"] for d in by_key] == ["crew/ops/deploy-approvals"]
    assert retriever.invoke("nothing matches this") == []


def test_min_score_drops_weaker_results(client: A2MClient) -> None:
    # scores are comparable only within one call (§5.3): a recall also counts as an access
    _seed(client)
    everything = A2MRetriever(client=client, k=5).invoke("deploy key rotates")
    assert len(everything) == 2
    assert len(A2MRetriever(client=client, k=5, min_score=0.0).invoke("deploy key")) == 2
    assert A2MRetriever(client=client, k=5, min_score=1.5).invoke("deploy key rotates") == []
    kept = A2MRetriever(client=client, k=5, min_score=0.3).invoke("deploy key rotates")
    assert all(d.metadata["score"] >= 0.3 for d in kept)


def test_semantic_with_caller_embeddings_stored_verbatim(client: A2MClient) -> None:
    embeddings = WordEmbeddings()
    texts = ["my cat is a lovely pet", "tea is my favourite drink", "paris is a city"]
    store = A2MVectorStore(embeddings, client, namespace="app/notes")
    ids = store.add_texts(texts)
    stored = client.timeline(embeddings=True, key_prefix="app/notes").records
    assert [r.embedding for r in stored] == embeddings.embed_documents(texts)
    retriever = A2MRetriever(client=client, embeddings=embeddings, k=1)
    (found,) = retriever.invoke("which animal is a pet?")
    assert found.page_content == "my cat is a lovely pet"
    assert found.metadata["key"] == f"app/notes/{ids[0]}"
    assert found.metadata["source_framework"] == "langchain"


async def test_async_twin(client: A2MClient, aclient: AsyncA2MClient) -> None:
    _seed(client)
    retriever = A2MRetriever(client=aclient, k=5)
    documents = await retriever.ainvoke("deploy")
    assert {d.page_content for d in documents} == {
        "the deploy key rotates every 90 days",
        "a deploy needs two approvals",
    }
    semantic = A2MRetriever(client=aclient, embeddings=WordEmbeddings(), k=1)
    await A2MVectorStore(WordEmbeddings(), aclient).aadd_texts(["tea is a drink"])
    assert [d.page_content for d in await semantic.ainvoke("drink tea")] == ["tea is a drink"]


def test_one_recall_per_query(client: A2MClient, monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(client)
    retriever = A2MRetriever(client=client)
    retriever.invoke("deploy")
    with counting(monkeypatch, client) as calls:
        retriever.invoke("deploy")
    assert dict(calls) == {"recall": 1}


def test_bad_options_are_refused(client: A2MClient) -> None:
    with pytest.raises(TypeError, match="unexpected search options"):
        A2MRetriever(client=client).invoke("x", limit=3)
    with pytest.raises(ValueError, match="k must be"):
        A2MRetriever(client=client).invoke("x", k=0)
    async_only = A2MRetriever(async_client=AsyncA2MClient("http://127.0.0.1:9/"))
    with pytest.raises(RuntimeError, match="ainvoke"):
        async_only.invoke("x")


def test_filters_take_operators_where_the_server_declares_them(client: A2MClient) -> None:
    client.remember(
        [
            {"content": "deploy one", "metadata": {"priority": 1}},
            {"content": "deploy two", "metadata": {"priority": 2}},
            {"content": "deploy three", "metadata": {"priority": 3}},
        ]
    )
    if not client.filter_operators():
        pytest.skip("this binding's server declares equality only")
    retriever = A2MRetriever(client=client, k=5, filter={"priority": {"$gte": 2}})
    assert sorted(d.page_content for d in retriever.invoke("deploy")) == [
        "deploy three",
        "deploy two",
    ]
